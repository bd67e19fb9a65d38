"""selectors/panels/jobs.py: the session page and the jobs panel's own endpoint draw the same
list (and the chat transcript comes from one builder too)."""

import re

import pytest

from sessions_app.services import jobs
from tests.support.job_sessions import SMALL, make_session
from tests.support.web import client_for

pytestmark = pytest.mark.django_db


def _jobs_ids(html: str) -> list[str]:
    return re.findall(r'data-job-id="([^"]+)"', html)


@pytest.mark.django_db(transaction=True)
def test_the_page_and_the_jobs_endpoint_draw_the_same_list(make_user, settings):
    settings.PIWEB_JOBS_QUEUE = "q-read-layer-tests-unconsumed"
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    job = jobs.request_compaction(session, actor=owner)
    client = client_for(owner)
    page = client.get(f"/s/{session.pi_id}/").content.decode()
    panel = client.get(f"/s/{session.pi_id}/jobs/").content.decode()
    assert _jobs_ids(page) == _jobs_ids(panel) == [str(job.pk)]
    # The chat panel's transcript comes from one builder too.
    transcript = client.get(f"/s/{session.pi_id}/chat/transcript/").content.decode()
    shown = re.findall(r'data-entry-id="([^"]+)"', transcript)
    assert shown and re.findall(r'data-entry-id="([^"]+)"', page) == shown
