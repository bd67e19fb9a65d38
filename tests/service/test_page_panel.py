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


def test_page_stamp_changes_with_what_the_live_panels_show(make_user):
    """The stamp the page is drawn at and the socket's hello compare equal only while the
    transcript, jobs, header figures, queue and model notice would draw the same."""
    from sessions_app.models import QueuedMessage
    from sessions_app.selectors.panels.page import page_stamp
    from sessions_app.services.navigation import navigate, set_label

    owner = make_user()
    session = make_session(owner, turns=3)
    first = page_stamp(session.pk)
    assert first is not None and first == page_stamp(session.pk)
    html = client_for(owner).get(f"/s/{session.pi_id}/").content.decode()
    assert f'data-piweb-stamp="{first}"' in html

    seen = {first}

    def changed() -> str:
        stamp = page_stamp(session.pk)
        assert stamp is not None and stamp not in seen
        seen.add(stamp)
        return stamp

    first_entry = session.entries.order_by("seq").first()
    navigate(Session.objects.get(pk=session.pk), first_entry.pi_id, actor=owner)  # leaf moves
    changed()
    set_label(Session.objects.get(pk=session.pk), first_entry.pi_id, "here", actor=owner)
    changed()  # an appended entry
    QueuedMessage.objects.create(session=session, mode="follow_up", text="later")
    changed()
    Session.objects.filter(pk=session.pk).update(name="renamed")  # (the row's version)
    Session.objects.get(pk=session.pk).save(update_fields=["modified_at"])
    changed()
    job = Job.objects.create(session=session, kind="compaction", status="queued")
    assert page_stamp(session.pk) is None  # a live job: the page always catches up
    Job.objects.filter(pk=job.pk).update(status="done")
    changed()
