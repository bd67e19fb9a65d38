"""Reads about jobs that views share (the jobs service owns their lifecycle)."""

from __future__ import annotations

from sessions_app.models import Job, Session


def earlier_branch_summary(session: Session, old_leaf: str | None, target: str) -> Job | None:
    """The newest branch summary already requested for leaving `old_leaf` for `target`
    (not failed or cancelled): a repeated submission finds it instead of a second one."""
    return (
        Job.objects.filter(
            session=session,
            kind=Job.Kind.BRANCH_SUMMARY,
            prepared_leaf_pi_id=old_leaf,
            target_pi_id=target,
        )
        .exclude(status__in=(Job.Status.FAILED, Job.Status.CANCELLED))
        .order_by("-created_at")
        .first()
    )


def session_job(session: Session, job_id, kind: str) -> Job | None:
    return Job.objects.filter(pk=job_id, session=session, kind=kind).first()
