"""The shadow repository job (services/jobs/snapshot_gc.py), issue #33 item 9: a
workspace's shadow repository is packed by a ``git gc`` job after every
PIWEB_SNAPSHOT_GC_EVERY snapshots, and removed once no session uses its workspace. Runs
go through the real chat service in-process (the real sandbox, real git); the jobs run
here through the lifecycle's ``run_job``, as the worker's task calls it."""

import os
from pathlib import Path

import pytest

from sessions_app.models import Job
from sessions_app.selectors import changes as changes_selectors
from sessions_app.services import manage, sessions
from sessions_app.services.jobs import lifecycle
from tests.support.agent_runs import run_here as run

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tasks_stay_in_process", "own_snapshot_dir", "bwrap_required"),
]


@pytest.fixture
def owner(make_user):
    return make_user()


@pytest.fixture
def session(owner, workspace, redis_ready):
    return sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")


def gc_jobs() -> list[Job]:
    return list(Job.objects.filter(kind=Job.Kind.SNAPSHOT_GC).order_by("created_at"))


def loose_objects(git_dir: str) -> int:
    objects = Path(git_dir, "objects")
    return sum(1 for d in objects.iterdir() if len(d.name) == 2 for _ in d.iterdir())


def test_a_gc_job_packs_the_repository_after_every_few_snapshots(session, owner, settings):
    settings.PIWEB_SNAPSHOT_GC_EVERY = 3
    run(session, owner, "!echo 1 > a.txt")  # the snapshots before and after: 2
    assert gc_jobs() == []
    run(session, owner, "!echo 2 > a.txt")  # 4: one job asked for
    (job,) = gc_jobs()
    repo = changes_selectors.repo_for(session)
    assert job.params["work_tree"] == repo.work_tree and loose_objects(repo.git_dir) > 0
    lifecycle.run_job(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.progress["outcome"] == "packed"
    assert loose_objects(repo.git_dir) == 0 and repo.snapshots_since_gc() == 0
    assert list(Path(repo.git_dir, "objects", "pack").glob("*.pack"))
    snap = repo.head()
    assert "a.txt" in repo.files(snap)  # nothing lost


def test_the_repository_is_removed_once_no_session_uses_its_workspace(session, owner, workspace):
    run(session, owner, "!echo 1 > a.txt")
    second = sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")
    git_dir = changes_selectors.repo_for(session).git_dir
    manage.delete_session(session, actor=owner, confirm=session.pi_id)
    (job,) = gc_jobs()
    lifecycle.run_job(job.pk)
    job.refresh_from_db()
    assert job.progress["outcome"] == "packed" and os.path.isdir(git_dir)  # still used

    manage.delete_session(second, actor=owner, confirm=second.pi_id)
    last = gc_jobs()[-1]
    lifecycle.run_job(last.pk)
    last.refresh_from_db()
    assert last.progress["outcome"] == "removed" and not os.path.exists(git_dir)
    assert (workspace / "a.txt").read_text() == "1\n"  # the workspace itself stays
