"""The agent-run job: one chat turn (or `!cmd`) in a worker.

The run itself (streaming, tools, the Redis run state, stop) lives in
``services/chat.py``; its lifecycle is the common one: created and enqueued by
:func:`create`, claimed and heartbeating through ``lifecycle``, finished by
:func:`finish`. A run is never run twice (it has side effects: tool calls, entries), so
a run whose worker died is failed, not requeued, and so is a run nobody picked up.
"""

from __future__ import annotations

from sessions_app.models import Job, Session
from sessions_app.services import events
from sessions_app.services.jobs import lifecycle

Status = Job.Status
# The run's own outcome (the `run_end` event's status) -> the job's status.
OUTCOMES = {
    "done": Status.DONE,
    "aborted": Status.CANCELLED,
    "error": Status.FAILED,
    "failed": Status.FAILED,
}


def create(session: Session, *, actor, params: dict, model: str) -> Job:
    """Store the queued run (the caller holds the session lock) and enqueue it."""
    activity = ("chat_sent", {"mode": params["mode"]})
    fields = {"params": params, "model": model, "prepared_leaf_pi_id": params["parent"]}
    return lifecycle.create(session, Job.Kind.AGENT_RUN, actor, activity, **fields)


def claim(job_id) -> tuple[Job, int] | None:
    return lifecycle.claim(job_id, kind=Job.Kind.AGENT_RUN)


def finish(job: Job, attempt: int, outcome: str, error: str = "", entry=None) -> str | None:
    """Store the run's outcome (if this attempt still holds the job); publish `run_end`."""
    return lifecycle.finish_own(
        job, attempt, OUTCOMES[outcome], error=error, entry=entry, phase=outcome, outcome=outcome
    )


def _run_end(job: Job) -> None:
    outcome = (job.progress or {}).get("outcome")
    if outcome is None:
        outcome = "cancelled" if job.status == Status.CANCELLED else "failed"
    events.publish(job.session_id, "run_end", {"run_id": str(job.pk), "status": outcome})


KIND = lifecycle.register(
    lifecycle.JobKind(
        kind=Job.Kind.AGENT_RUN,
        task="piweb.agent_run",
        on_stale=lifecycle.FAIL,
        jobs_queue=False,
        stale_error="The worker running this stopped reporting; send the message again.",
        lost_error="No worker picked this up in time; send the message again.",
        on_finish=_run_end,
    )
)
