"""The shadow repository job: a workspace's shadow repository packed with ``git gc``
after every PIWEB_SNAPSHOT_GC_EVERY snapshots (``services.changes.record`` asks for it),
or removed once no session uses its workspace any more (asked for when a session is
deleted). No session: ``params`` names the repository (its key and work tree). Both are
idempotent, so a run whose worker died runs again.
"""

from __future__ import annotations

import os
import shutil

from django.db import transaction

from sessions_app.models import Job
from sessions_app.selectors.changes import repo_at, repo_key, repository_in_use
from sessions_app.services import sandboxing
from sessions_app.services.jobs import lifecycle

Status = Job.Status


def request_gc(key: str, work_tree: str) -> Job:
    """Queue the clean-up of the shadow repository ``key`` (of ``work_tree``)."""
    with transaction.atomic():
        job = Job.objects.create(
            kind=Job.Kind.SNAPSHOT_GC,
            status=Status.QUEUED,
            params={"repo": key, "work_tree": work_tree},
            progress={"phase": "queued"},
        )
        lifecycle.enqueue(job)
    return job


def clean_repository(key: str, work_tree: str) -> str:
    """The ``snapshot_gc`` job's work: remove the shadow repository of ``work_tree`` when
    no session uses that workspace any more (no snapshot row refers to it, no session
    starts there), else pack it. Returns what was done."""
    if repo_key(work_tree) != key:
        return "unknown repository"
    repo = repo_at(work_tree)
    if not os.path.isdir(repo.git_dir):
        return "gone"
    if not repository_in_use(key, work_tree):
        with repo.locked():
            shutil.rmtree(repo.git_dir)
        return "removed"
    sandboxing.make_var_reachable()
    repo.gc()
    return "packed"


def run(job: Job, attempt: int) -> str | None:
    outcome = clean_repository(job.params["repo"], job.params["work_tree"])
    return lifecycle.finish_own(job, attempt, Status.DONE, phase="done", outcome=outcome)


KIND = lifecycle.register(
    lifecycle.JobKind(
        kind=Job.Kind.SNAPSHOT_GC,
        on_stale=lifecycle.REQUEUE,
        queue=None,  # the default queue: small tasks
        run=run,
    )
)
