"""Reads about jobs that views share (the jobs service owns their lifecycle)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from sessions_app.models import Job, QueuedMessage, Session


def latest_job(
    session: Session, kind: str, prepared_leaf: str | None, target: str, *, live: bool = False
) -> Job | None:
    """The newest job of `kind` prepared at `prepared_leaf` for `target` (a comparison:
    sides a and b; a branch summary: the leaf left and where it went). `live`: not failed
    or cancelled, so a repeated request finds the one that went through."""
    found = Job.objects.filter(
        session=session, kind=kind, prepared_leaf_pi_id=prepared_leaf, target_pi_id=target
    )
    if live:
        found = found.exclude(status__in=(Job.Status.FAILED, Job.Status.CANCELLED))
    return found.order_by("-created_at").first()


def import_job(user, job_id) -> Job | None:
    """An import job `user` started (None for anyone else's, or no such job)."""
    return Job.objects.filter(pk=job_id, kind=Job.Kind.IMPORT, created_by=user).first()


def session_job(session: Session, job_id, kind: str) -> Job | None:
    return Job.objects.filter(pk=job_id, session=session, kind=kind).first()


SUMMARY_KINDS = (Job.Kind.COMPACTION, Job.Kind.BRANCH_SUMMARY)


def recent_jobs(session: Session, limit: int = 10) -> list[Job]:
    """The session's latest compactions and branch summaries (the jobs panel)."""
    return list(
        Job.objects.filter(session=session, kind__in=SUMMARY_KINDS)
        .select_related("result_entry")
        .order_by("-created_at")[:limit]
    )


def queue_of(session: Session, job: Job | None = None) -> QuerySet[QueuedMessage]:
    """The messages queued for a branch's run `job` (steers and follow-ups, oldest first);
    an item recorded without a run waits for whichever run takes it first. With no run,
    only those."""
    queued = QueuedMessage.objects.filter(session=session)
    if job is None:
        return queued.filter(run__isnull=True)
    return queued.filter(Q(run=job) | Q(run__isnull=True))


def queued_messages(session: Session, job: Job | None = None) -> list[QueuedMessage]:
    """`queue_of`, loaded with their authors (the chat panel's list)."""
    return list(queue_of(session, job).select_related("created_by"))


def queued_count(session: Session, job: Job | None = None) -> int:
    """How many messages wait for the run (the count the pages show)."""
    return queue_of(session, job).count()
