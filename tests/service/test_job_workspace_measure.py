"""The workspace measure job (services/jobs/workspace_measure.py): asked for after a user's
commands (`resources.request_measure`), at most one queued per user, idempotent, and run
again when its worker dies; measuring strips setuid/setgid bits and follows no link. Jobs run here through the lifecycle's `run_job` (what the
worker's task calls); their messages go to a queue no worker consumes."""

import stat
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from sessions_app.models import Job, WorkspaceUsage
from sessions_app.services import resources
from sessions_app.services.jobs import lifecycle, workspace_measure
from sessions_app.services.jobs.workspace_measure import request_measure

pytestmark = [
    pytest.mark.embedded,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("redis_ready", "tasks_stay_in_process"),
]
Status = Job.Status
KB = 1024


@pytest.fixture
def owner(make_user, settings, tmp_path):
    root = (tmp_path / "workspaces").resolve()
    settings.PIWEB_WORKSPACE_ROOTS = [root]
    user = make_user("measured")
    folder = root / str(user.pk) / "proj"
    folder.mkdir(parents=True)
    (folder / "data.bin").write_bytes(b"x" * 300 * KB)
    return user


def measures(user) -> list[Job]:
    return list(
        Job.objects.filter(kind=Job.Kind.WORKSPACE_MEASURE, created_by=user).order_by("created_at")
    )


def test_one_measure_waits_per_user(owner, make_user):
    first = request_measure(owner.pk)
    assert first is not None and first.status == Status.QUEUED and first.session_id is None
    assert request_measure(owner.pk) is None  # one is waiting: it will see the same
    other = request_measure(make_user("other").pk)
    assert other is not None
    lifecycle.claim(first.pk)  # running: what it measures may already be behind
    second = request_measure(owner.pk)
    assert second is not None
    assert [j.pk for j in measures(owner)] == [first.pk, second.pk]


def test_a_command_asks_for_a_measure_at_most_once_a_while(owner, settings):
    settings.PIWEB_WORKSPACE_QUOTA_MB = 1
    settings.PIWEB_WORKSPACE_MEASURE_SECONDS = 60
    assert resources.request_measure(owner.pk) is True
    assert resources.request_measure(owner.pk) is False  # within the minute
    assert len(measures(owner)) == 1
    # A cleanup asks again at once, but the measure already waiting will do.
    assert resources.request_measure(owner.pk, force=True) is False
    assert len(measures(owner)) == 1


def test_the_job_measures_and_is_idempotent(owner):
    job = request_measure(owner.pk)
    assert lifecycle.run_job(job.pk) == Status.DONE
    assert lifecycle.run_job(job.pk) is None  # a redelivered message: nothing to do
    job.refresh_from_db()
    usage = WorkspaceUsage.objects.get(user=owner)
    assert 300 * KB <= usage.bytes < 400 * KB and usage.files == 1
    assert (job.progress["bytes"], job.progress["files"]) == (usage.bytes, 1)
    again = request_measure(owner.pk)
    assert lifecycle.run_job(again.pk) == Status.DONE
    again.refresh_from_db()
    assert again.progress["bytes"] == WorkspaceUsage.objects.get(user=owner).bytes == usage.bytes


def test_a_dead_worker_s_measure_is_swept_and_run_again(owner, settings):
    job = request_measure(owner.pk)
    claimed, attempt = lifecycle.claim(job.pk)
    silent = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS + 5)
    Job.objects.filter(pk=job.pk).update(heartbeat_at=silent)
    assert lifecycle.sweep() == [str(job.pk)]
    job.refresh_from_db()
    assert job.status == Status.QUEUED and job.progress["phase"] == "requeued"
    assert lifecycle.run_job(job.pk) == Status.DONE
    job.refresh_from_db()
    assert job.attempts == 2 and job.progress["bytes"] >= 300 * KB
    assert WorkspaceUsage.objects.get(user=owner).bytes == job.progress["bytes"]
    assert lifecycle.finish_own(claimed, attempt, Status.FAILED, error="late") is None


def test_a_dead_measure_with_a_newer_one_waiting_is_superseded_not_queued_twice(owner, settings):
    dead = request_measure(owner.pk)
    lifecycle.claim(dead.pk)
    waiting = request_measure(owner.pk)
    silent = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS + 5)
    Job.objects.filter(pk=dead.pk).update(heartbeat_at=silent)
    assert lifecycle.sweep() == [str(dead.pk)]
    dead.refresh_from_db()
    assert dead.status == Status.SUPERSEDED
    assert lifecycle.run_job(waiting.pk) == Status.DONE
    assert [j.status for j in measures(owner)] == [Status.SUPERSEDED, Status.DONE]


def test_a_measure_of_a_deleted_user_ends_without_measuring(owner):
    job = request_measure(owner.pk)
    folder = Path(workspace_measure.user_folders(owner.pk)[0])
    owner.delete()
    assert lifecycle.run_job(job.pk) == Status.CANCELLED
    assert not WorkspaceUsage.objects.exists() and folder.exists()


def test_measuring_strips_setuid_and_setgid_but_never_follows_links(owner, tmp_path):
    ws = Path(workspace_measure.user_folders(owner.pk)[0]) / "proj"
    planted = ws / "sub" / "p"
    planted.parent.mkdir()
    planted.write_bytes(b"#!/bin/sh\nid\n")
    planted.chmod(0o6755)
    outside = tmp_path / "outside-suid"
    outside.write_bytes(b"x")
    outside.chmod(0o4755)
    (ws / "link").symlink_to(outside)
    usage = workspace_measure.measure_workspace(owner.pk)
    assert stat.S_IMODE(planted.stat().st_mode) == 0o755
    assert stat.S_IMODE(outside.stat().st_mode) == 0o4755  # not ours: untouched
    assert usage.stripped == 1 and usage.files == 2  # (and the owner fixture's data.bin)
    assert workspace_measure.measure_workspace(owner.pk).stripped == 1  # nothing more the 2nd time
