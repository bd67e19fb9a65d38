"""The jobs views (sessions_app/views/jobs.py): the panel, compact now and the compaction
settings: rights, CSRF, validation; rendering never sweeps."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from sessions_app.models import Job, SessionShare, Team
from sessions_app.selectors.llm.windows import compaction_settings
from sessions_app.services import jobs
from tests.support.access import Call, each, login_redirects, post, statuses
from tests.support.job_sessions import SMALL, make_session
from tests.support.web import client_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("no_worker_for_these_jobs"),
]

PANEL = [Call("jobs_panel")]
CHANGES = [
    post("jobs_compact", {"focus": "x"}),
    post("jobs_settings", {"enabled": "on", "reserve_tokens": "9", "keep_recent_tokens": "9"}),
]


def _shared(session, role):
    member = session.owner.__class__.objects.create_user(f"{role}-{session.pk}", password="x")
    team = Team.objects.create(name=f"team-{role}-{session.pk}")
    team.members.add(member)
    SessionShare.objects.create(session=session, team=team, role=role)
    return member


@pytest.mark.embedded
def test_panel_rights_and_compact_now(make_user):
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    viewer, editor, stranger = _shared(session, "viewer"), _shared(session, "editor"), make_user()
    panel = reverse("sessions_app:jobs_panel", args=[session.pi_id])
    compact = reverse("sessions_app:jobs_compact", args=[session.pi_id])

    page = client_for(viewer).get(reverse("sessions_app:session_detail", args=[session.pi_id]))
    assert page.status_code == 200
    assert b'id="jobs-list"' in page.content and b"Compact now" not in page.content
    assert client_for(viewer).get(panel).status_code == 200
    assert client_for(stranger).get(panel).status_code == 404
    assert client_for(viewer).post(compact, {"focus": "x"}).status_code == 403
    assert not Job.objects.filter(session=session).exists()

    ed = client_for(editor)
    response = ed.post(compact, {"focus": "the cache"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    job = Job.objects.get(session=session)
    assert job.params["focus"] == "the cache" and job.created_by == editor
    assert f'data-job-id="{job.pk}"'.encode() in response.content
    assert b"every 2s" in response.content  # polling while a job is active
    too_long = ed.post(compact, {"focus": "x" * 5000}, HTTP_HX_REQUEST="true")
    assert too_long.status_code == 400 and b"limited to" in too_long.content

    job.status = "done"
    job.save()
    assert b"every 2s" not in ed.get(panel).content  # nothing active: no polling


def test_it_requires_login(shared):
    assert login_redirects(PANEL + CHANGES, shared.session) == each(PANEL + CHANGES, "/login/")


def test_it_requires_a_share_of_the_session(shared):
    strangers = statuses(client_for(shared.stranger), PANEL + CHANGES, shared.session)
    assert strangers == each(PANEL + CHANGES, 404)


def test_it_requires_editor_rights_to_compact_or_change_the_settings(shared):
    assert statuses(client_for(shared.viewer), CHANGES, shared.session) == each(CHANGES, 403)
    assert not Job.objects.filter(session=shared.session).exists()
    assert statuses(client_for(shared.viewer), PANEL, shared.session) == each(PANEL, 200)


def test_it_requires_a_csrf_token(make_user):
    owner = make_user()
    session = make_session(owner, turns=1)
    client = client_for(owner, csrf=True)
    url = reverse("sessions_app:jobs_compact", args=[session.pi_id])
    assert client.post(url, {"focus": ""}).status_code == 403
    assert not Job.objects.filter(session=session).exists()


def test_settings_form(make_user):
    owner = make_user()
    session = make_session(owner, turns=1)
    viewer = _shared(session, "viewer")
    url = reverse("sessions_app:jobs_settings", args=[session.pi_id])
    data = {"enabled": "on", "reserve_tokens": "9000", "keep_recent_tokens": "1234"}
    assert client_for(viewer).post(url, data).status_code == 403
    ok = client_for(owner).post(url, data, HTTP_HX_REQUEST="true")
    assert ok.status_code == 200 and b"Saved." in ok.content
    session.refresh_from_db()
    cfg = compaction_settings(session)
    assert (cfg.enabled, cfg.reserve_tokens, cfg.keep_recent_tokens) == (True, 9000, 1234)
    off = client_for(owner).post(url, {**data, "enabled": ""}, HTTP_HX_REQUEST="true")
    session.refresh_from_db()
    assert off.status_code == 200 and not compaction_settings(session).enabled
    bad = client_for(owner).post(url, {**data, "reserve_tokens": "lots"}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 400 and b"whole numbers" in bad.content


def test_the_panel_only_reads_and_shows_what_the_sweep_did(make_user, settings):
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    job = jobs.request_compaction(session, actor=owner)
    old = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS + 1)
    Job.objects.filter(pk=job.pk).update(status="running", attempts=1, heartbeat_at=old)
    url = reverse("sessions_app:jobs_panel", args=[session.pi_id])
    response = client_for(owner).get(url)
    assert response.status_code == 200
    job.refresh_from_db()
    assert job.status == "running"  # a GET writes nothing
    # The worker's sweeper requeues it; the next render says so.
    assert jobs.sweep_stale_jobs() == [str(job.pk)]
    job.refresh_from_db()
    assert job.status == "queued" and job.progress["phase"] == "requeued"
    assert b"queued again" in client_for(owner).get(url).content
