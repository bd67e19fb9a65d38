"""The agent-run job: one chat turn (or `!cmd`) in a worker.

The run itself (streaming, tools, the Redis run state, stop) lives in
``services/chat.py``; its lifecycle is the common one: created and enqueued by
:func:`create`, claimed and heartbeating through ``lifecycle``, finished by
:func:`finish`. A run is never run twice (it has side effects: tool calls, entries), so
a run whose worker died is failed, not requeued, and so is a run nobody picked up.

Queues and fairness: a turn goes to the runs queue, a ``!cmd`` to the commands queue
(``piweb/queues.py``), each with its own worker slots. One user has at most
``PIWEB_USER_MAX_RUNS`` runs sent to the workers at once (counted over all their
sessions; the user is whoever sent it, else the session's owner): a run over that limit
is stored "held" ("queued behind your other runs") and not sent; when one of the user's
runs ends, :func:`dispatch` sends their oldest held run. The user's row lock makes the
count and the decision one step, whichever web process or worker takes it.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from piweb import queues
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


HELD_NOTE = "queued behind your other runs"


def runner_of(job: Job) -> int:
    """The user a run counts against: who sent it, else the session's owner."""
    return job.created_by_id or job.session.owner_id


def _runs_of(user_id: int):
    return Job.objects.filter(kind=Job.Kind.AGENT_RUN, status__in=Job.ACTIVE).filter(
        Q(created_by_id=user_id) | Q(created_by__isnull=True, session__owner_id=user_id)
    )


def _lock_user(user_id: int) -> None:
    get_user_model().objects.select_for_update().filter(pk=user_id).first()


def _sent_count(user_id: int) -> int:
    """The user's runs sent to the workers and not finished (held ones not counted)."""
    rows = _runs_of(user_id).values_list("progress", flat=True)
    return sum(1 for progress in rows if not (progress or {}).get("held"))


def is_held(job: Job) -> bool:
    return job.status == Job.Status.QUEUED and bool((job.progress or {}).get("held"))


def create(session: Session, *, actor, params: dict, model: str) -> Job:
    """Store the queued run (the caller holds the session lock) and enqueue it, or hold
    it when its user already has ``PIWEB_USER_MAX_RUNS`` runs sent."""
    activity = ("chat_sent", {"mode": params["mode"]})
    fields = {"params": params, "model": model, "prepared_leaf_pi_id": params["parent"]}
    user_id = actor.pk if getattr(actor, "is_authenticated", False) else session.owner_id
    _lock_user(user_id)
    held = _sent_count(user_id) >= max(1, settings.PIWEB_USER_MAX_RUNS)
    if held:
        fields["progress"] = {"phase": "queued", "held": True, "note": HELD_NOTE}
    return lifecycle.create(session, Job.Kind.AGENT_RUN, actor, activity, send=not held, **fields)


def dispatch(user_id: int) -> list[str]:
    """Send the user's oldest held runs while they are under their limit; their ids."""
    sent = []
    with transaction.atomic():
        _lock_user(user_id)
        room = max(1, settings.PIWEB_USER_MAX_RUNS) - _sent_count(user_id)
        if room <= 0:
            return sent
        waiting = (
            _runs_of(user_id)
            .filter(status=Job.Status.QUEUED)
            .select_for_update(skip_locked=True, of=("self",))
            .order_by("created_at")
        )
        for job in waiting:
            if room <= 0:
                break
            if not is_held(job):
                continue
            job.progress = {"phase": "queued", "resent_at": timezone.now().timestamp()}
            job.save(update_fields=["progress"])
            lifecycle.publish_progress(job)
            lifecycle.enqueue(job)
            sent.append(str(job.pk))
            room -= 1
    return sent


def dispatch_waiting() -> None:
    """For every user with held runs: send what their limit allows (sweeper's safety net)."""
    users = set()
    for job in Job.objects.filter(kind=Job.Kind.AGENT_RUN, status=Job.Status.QUEUED).select_related(
        "session"
    ):
        if is_held(job):
            users.add(runner_of(job))
    for user_id in users:
        dispatch(user_id)


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
    dispatch(runner_of(job))


def _queue(job: Job) -> str:
    return queues.COMMANDS if (job.params or {}).get("mode") == "bash" else queues.RUNS


KIND = lifecycle.register(
    lifecycle.JobKind(
        kind=Job.Kind.AGENT_RUN,
        task="piweb.agent_run",
        on_stale=lifecycle.FAIL,
        queue=_queue,
        on_sweep=dispatch_waiting,
        stale_error="The worker running this stopped reporting; send the message again.",
        lost_error="No worker picked this up in time; send the message again.",
        on_finish=_run_end,
    )
)
