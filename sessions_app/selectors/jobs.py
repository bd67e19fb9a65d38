"""Reads about jobs that views and the job services share (the jobs service owns their
lifecycle)."""

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


def next_queued(session: Session, job: Job | None = None, mode: str | None = None):
    """The oldest message queued for the run `job` (of `mode`, if given), or None."""
    queued = queue_of(session, job)
    if mode is not None:
        queued = queued.filter(mode=mode)
    return queued.first()


def queued_messages(session: Session, job: Job | None = None) -> list[QueuedMessage]:
    """`queue_of`, loaded with their authors (the chat panel's list)."""
    return list(queue_of(session, job).select_related("created_by"))


def queued_item(session: Session, item_id: int | None) -> QueuedMessage | None:
    """One message still waiting in the session's queue, or None (gone, or no id)."""
    if item_id is None:
        return None
    return QueuedMessage.objects.filter(session=session, pk=item_id).first()


def queued_count(session: Session, job: Job | None = None) -> int:
    """How many messages wait for the run (the count the pages show)."""
    return queue_of(session, job).count()


# --- what the job services look up before they write ------------------------------------


def active_runs_of(user_id: int) -> QuerySet[Job]:
    """The agent runs that count against the user (who sent them, else the session's
    owner) and are not finished: a queryset, which a dispatch narrows and locks."""
    return Job.objects.filter(kind=Job.Kind.AGENT_RUN, status__in=Job.ACTIVE).filter(
        Q(created_by_id=user_id) | Q(created_by__isnull=True, session__owner_id=user_id)
    )


def sent_run_count(user_id: int) -> int:
    """The user's runs sent to the workers and not finished (held ones not counted)."""
    rows = active_runs_of(user_id).values_list("progress", flat=True)
    return sum(1 for progress in rows if not (progress or {}).get("held"))


def queued_runs() -> list[Job]:
    """Every queued agent run (held ones included), with its session."""
    return list(
        Job.objects.filter(kind=Job.Kind.AGENT_RUN, status=Job.Status.QUEUED).select_related(
            "session"
        )
    )


def active_branch_summaries(session: Session, target_pi_id: str) -> list[Job]:
    """The session's active branch summaries towards `target_pi_id`, oldest first."""
    return list(
        Job.objects.filter(
            session=session,
            kind=Job.Kind.BRANCH_SUMMARY,
            status__in=Job.ACTIVE,
            target_pi_id=target_pi_id,
        ).order_by("created_at")
    )


def active_compaction(session_pk: int) -> Job | None:
    """The session's oldest active compaction, or None."""
    return (
        Job.objects.filter(session_id=session_pk, kind=Job.Kind.COMPACTION, status__in=Job.ACTIVE)
        .order_by("created_at")
        .first()
    )


def active_compare_summary(session: Session, a_pi_id: str, b_pi_id: str) -> Job | None:
    """The session's oldest active summary of the difference between a and b, or None."""
    return (
        Job.objects.filter(
            session=session,
            kind=Job.Kind.COMPARE_SUMMARY,
            status__in=Job.ACTIVE,
            prepared_leaf_pi_id=a_pi_id,
            target_pi_id=b_pi_id,
        )
        .order_by("created_at")
        .first()
    )


def active_job_pks(kinds, session_pk: int | None = None) -> list:
    """The pks of the active jobs of these kinds (of one session, if given)."""
    qs = Job.objects.filter(kind__in=list(kinds), status__in=Job.ACTIVE)
    if session_pk is not None:
        qs = qs.filter(session_id=session_pk)
    return list(qs.values_list("pk", flat=True))


def still_unsent(job_pk) -> bool:
    """Whether the job is still queued with its sending failed."""
    return Job.objects.filter(
        pk=job_pk, status=Job.Status.QUEUED, progress__enqueue_failed=True
    ).exists()


def search_index_pending(session_pk: int) -> bool:
    """Whether a queued or running `search_index` job still has entries of this session
    to index (then its search rows are not all written yet)."""
    jobs = Job.objects.filter(kind=Job.Kind.SEARCH_INDEX, status__in=Job.ACTIVE)
    return any(
        int(pk) == session_pk
        for params in jobs.values_list("params", flat=True)
        for pk, _ in (params or {}).get("work") or []
    )
