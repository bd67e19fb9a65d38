"""The search view (sessions_app/views/search.py): signed-in people only. What a search
finds, and in which sessions, is tested in test_search.py."""

import pytest

from tests.support.access import Call, each, login_redirects

pytestmark = [pytest.mark.django_db]

ANY_USER = [Call("search", per_session=False)]


def test_it_requires_login(shared):
    assert login_redirects(ANY_USER, shared.session) == each(ANY_USER, "/login/")
