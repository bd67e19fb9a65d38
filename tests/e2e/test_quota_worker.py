"""The workspace quota through the real worker: a `!cmd` fills the workspace, the worker
measures it in the background (the `workspace_measure` job the command's end asks for),
and the next `!cmd` is refused with how much to delete; deleting brings commands back.
The measure job itself: idempotent, and run again when its worker died."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from sessions_app.models import Job, WorkspaceUsage
from sessions_app.services.jobs import lifecycle, workspace_measure
from tests.support.agent_runs import messages, new_session, send, wait_run
from tests.support.job_sessions import wait_for_job
from tests.support.waiting import wait_until
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]
MB = 1024 * 1024


@pytest.mark.usefixtures("bwrap_required")
def test_a_filled_workspace_is_measured_in_the_background_and_refused(
    worker, make_user, workspace, settings
):
    settings.PIWEB_WORKSPACE_QUOTA_MB = 5
    user = make_user()
    session = new_session(user, workspace)
    client = client_for(user)
    assert "Sent." in send(client, session, "!head -c 8M /dev/urandom > big.bin").content.decode()
    assert wait_run(session).status == "done"
    assert wait_until(
        lambda: WorkspaceUsage.objects.filter(user=user, bytes__gte=8 * MB).exists(), 30
    ), "the worker did not measure the workspace"
    refused = send(client, session, "!echo more")
    assert refused.status_code == 400
    body = refused.content.decode()
    assert "over your quota of 5.0MB" in body and "delete at least 3." in body
    assert Job.objects.filter(session=session).count() == 1  # nothing was queued
    # A lone `rm` still runs, and the measure right after it lifts the refusal.
    assert "Sent." in send(client, session, "!rm big.bin").content.decode()
    assert wait_run(session).status == "done"
    assert wait_until(
        lambda: WorkspaceUsage.objects.filter(user=user, bytes__lt=1 * MB).exists(), 30
    )
    assert "Sent." in send(client, session, "!echo more").content.decode()
    wait_run(session)
    assert messages(session)[-1]["output"] == "more\n"


@pytest.mark.embedded
def test_the_worker_measures_once_the_same_again_and_after_a_dead_worker(
    worker, make_user, settings
):
    user = make_user()
    folder = Path(workspace_measure.user_folders(user.pk)[0]) / "proj"
    folder.mkdir(parents=True)
    (folder / "data.bin").write_bytes(b"x" * 2 * MB)
    first = wait_for_job(workspace_measure.request_measure(user.pk), 30)
    assert first.status == "done", first.error
    measured = first.progress["bytes"]
    assert 2 * MB <= measured < 3 * MB and first.progress["files"] == 1
    again = wait_for_job(workspace_measure.request_measure(user.pk), 30)
    assert again.status == "done" and again.progress["bytes"] == measured
    # A worker that took a measure and died: the sweep queues it again, a worker runs it.
    (folder / "more.bin").write_bytes(b"y" * MB)
    silent = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS + 5)
    dead = Job.objects.create(
        kind=Job.Kind.WORKSPACE_MEASURE,
        status=Job.Status.RUNNING,
        created_by=user,
        attempts=1,
        started_at=silent,
        heartbeat_at=silent,
    )
    lifecycle.sweep(kinds=[Job.Kind.WORKSPACE_MEASURE])  # (or a worker's sweeper did)
    wait_for_job(dead, 30)
    assert dead.status == "done" and dead.attempts == 2, dead.error
    assert dead.progress["bytes"] >= measured + MB and dead.progress["files"] == 2
    assert WorkspaceUsage.objects.get(user=user).bytes == dead.progress["bytes"]
