"""The workspace measure job: the disk a user's workspace folders take, measured in a
worker after the user's commands (``resources.request_measure`` decides when) and stored
for the quota check (``resources.measure_workspace``, which also strips setuid/setgid
bits).

``created_by`` is the user measured. At most one measure per user waits in the queue
(a database constraint): it measures what is there when it runs, so a second queued one
would find the same. Measuring is idempotent, so a run whose worker died is run again.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from sessions_app.models import Job
from sessions_app.services.jobs import lifecycle

Status = Job.Status


def request_measure(user_id: int) -> Job | None:
    """Queue a measure of the user's workspaces; None when one is queued already."""
    try:
        with transaction.atomic():
            job = Job.objects.create(
                kind=Job.Kind.WORKSPACE_MEASURE,
                status=Status.QUEUED,
                created_by_id=user_id,
                progress={"phase": "queued"},
            )
            lifecycle.enqueue(job)
    except IntegrityError:
        return None
    return job


def run(job: Job, attempt: int) -> str | None:
    from sessions_app.services.resources import measure_workspace

    if job.created_by_id is None:  # the user is gone, and their folders with them
        return lifecycle.finish_own(job, attempt, Status.CANCELLED, phase="done")
    usage = measure_workspace(job.created_by_id)
    return lifecycle.finish_own(
        job, attempt, Status.DONE, phase="done", bytes=usage.bytes, files=usage.files
    )


KIND = lifecycle.register(
    lifecycle.JobKind(
        kind=Job.Kind.WORKSPACE_MEASURE,
        on_stale=lifecycle.REQUEUE,
        queue=None,  # the default queue: small tasks, served with the imports
        run=run,
    )
)
