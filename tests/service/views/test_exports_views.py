"""The export view (sessions_app/views/exports.py): who may export a session. The exports
themselves are tested in test_exports.py."""

import pytest

from tests.support.access import Call, each, login_redirects, statuses
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db]

READS = [Call("export", args=("md",))]


def test_it_requires_login(shared):
    assert login_redirects(READS, shared.session) == each(READS, "/login/")


def test_it_requires_a_share_of_the_session(shared):
    strangers = statuses(client_for(shared.stranger), READS, shared.session)
    assert strangers == each(READS, 404)
    assert statuses(client_for(shared.viewer), READS, shared.session) == each(READS, 200)
