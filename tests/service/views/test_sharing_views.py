"""The sharing views (sessions_app/views/sharing.py): who may manage sharing, and who may
see the teams page. The share-link pages themselves are tested in test_sharing.py and
test_share_scope.py."""

import pytest

from tests.support.access import Call, each, login_redirects, post, statuses
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db]

OWNER_ONLY = [
    Call("sharing"),
    post("sharing_link", {"scope": "path"}),
]
ANY_USER = [Call("teams", per_session=False)]


def test_it_requires_login(shared):
    calls = OWNER_ONLY + ANY_USER
    assert login_redirects(calls, shared.session) == each(calls, "/login/")


def test_it_requires_a_share_of_the_session(shared):
    strangers = statuses(client_for(shared.stranger), OWNER_ONLY, shared.session)
    assert strangers == each(OWNER_ONLY, 404)


def test_it_requires_ownership_to_manage_sharing(shared):
    editors = statuses(client_for(shared.editor), OWNER_ONLY, shared.session)
    assert editors == each(OWNER_ONLY, 403)
    assert not shared.session.share_links.exists()
