"""selectors/panels/page.py: drawing the whole session page writes nothing."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.models import Job, Session
from sessions_app.services import jobs
from tests.support.job_sessions import SMALL, make_session
from tests.support.web import client_for

pytestmark = pytest.mark.django_db


@pytest.mark.django_db(transaction=True)
def test_drawing_the_session_page_writes_nothing(make_user, settings):
    """Template tags only format: a GET of the page (every panel) sends no INSERT,
    UPDATE or DELETE, even with a job whose worker stopped heartbeating."""
    from datetime import timedelta

    from django.utils import timezone

    settings.PIWEB_JOBS_QUEUE = "q-read-layer-tests-unconsumed"
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    job = jobs.request_compaction(session, actor=owner)
    old = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS + 1)
    Job.objects.filter(pk=job.pk).update(status="running", attempts=1, heartbeat_at=old)
    client = client_for(owner)
    client.get("/")  # (the login's own session writes happen before we count)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(f"/s/{session.pi_id}/").status_code == 200
    writes = [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert writes == []
    assert Job.objects.get(pk=job.pk).status == "running"
    assert Session.objects.get(pk=session.pk).leaf_pi_id == session.leaf_pi_id
