"""The activity view (sessions_app/views/activity.py): who may read a session's activity."""

import pytest

from tests.support.access import Call, each, login_redirects, statuses
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db]

READS = [Call("activity")]


def test_it_requires_login(shared):
    assert login_redirects(READS, shared.session) == each(READS, "/login/")


def test_it_requires_a_share_of_the_session(shared):
    strangers = statuses(client_for(shared.stranger), READS, shared.session)
    assert strangers == each(READS, 404)
    assert statuses(client_for(shared.viewer), READS, shared.session) == each(READS, 200)
