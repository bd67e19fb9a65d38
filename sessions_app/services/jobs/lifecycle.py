"""The one job lifecycle: create, enqueue, claim, heartbeat, finish, sweep.

Every kind of Job (compaction, branch summary, compare summary, agent run, import, search
indexing, workspace measure) goes through these functions; a kind only says, in a
:class:`JobKind` it registers, which Celery task runs it, what to do with it when its
worker dies, and how to run it.

- ``create`` stores the row (the caller holds the session lock), publishes its
  ``job_progress`` and enqueues it after the commit.
- ``enqueue`` sends the kind's task by name through the Celery app (services never import
  ``tasks.py``). A broker that is down does not fail the request: the job stays queued,
  flagged ``enqueue_failed``, and the next sweep sends it again.
- ``claim`` moves a job to running (``attempts += 1``); the attempt number is the claim
  token. Heartbeats, progress and the finish of a run all check it, so a worker that was
  presumed dead and taken over writes nothing when it wakes up.
- ``finish`` / ``finish_own`` store the outcome and publish it; :func:`job_event_data` is the
  only place the ``job_progress`` payload is built.
- ``sweep`` runs in the worker (``start_sweeper``), never during a request that only reads:
  a running job whose worker is gone is requeued (or failed after
  ``PIWEB_JOB_MAX_ATTEMPTS`` runs) or failed at once, as its kind says; a queued job whose
  broker message was lost is sent again (or failed).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, close_old_connections, connection, transaction
from django.utils import timezone

from piweb import queues
from piweb.celery import app as celery_app
from sessions_app.core.errors import ServiceError
from sessions_app.models import Entry, Job, Session
from sessions_app.selectors.entries import pi_id_of
from sessions_app.selectors.jobs import active_job_pks
from sessions_app.services import events, sessions

log = logging.getLogger(__name__)

Status = Job.Status
REQUEUE, FAIL = "requeue", "fail"
RUN_JOB_TASK = "piweb.run_job"  # tasks.run_job: runs any kind that has a `run`


class JobError(ServiceError):
    """Bad input to a job request (message is shown to the user)."""

    code = "job"


@dataclass(frozen=True)
class JobKind:
    """What the lifecycle needs to know about one kind of job.

    ``task``: the Celery task name that runs it (by default the generic one, which calls
    :func:`run_job`). ``on_stale``: ``REQUEUE`` (run it again,
    up to ``PIWEB_JOB_MAX_ATTEMPTS`` runs) or ``FAIL`` (never run twice; fail it with
    ``stale_error``, and a queued job nobody picked up in time with ``lost_error``).
    ``queue``: which of piweb's queues runs it (``piweb/queues.py``: each has its own
    worker slots; None: the default queue of small tasks), or a function of the job
    giving one.
    ``on_claim(job)`` may set the claimed job's model and progress before it is saved;
    ``on_finish(job)`` publishes what the kind's pages need besides ``job_progress``.
    ``run(job, attempt)`` does the work for :func:`run_job` and returns the final status
    (every kind has one since the agent run moved here too).
    ``on_sweep()`` runs after each full sweep (the agent run starts the runs that waited
    behind a user's other runs, should a finish have missed them).
    A queued job whose progress says ``held`` is waiting on purpose: never "lost".
    """

    kind: str
    task: str = RUN_JOB_TASK
    on_stale: str = REQUEUE
    queue: str | None | Callable[[Job], str] = queues.SUMMARIES
    stale_error: str = "The worker running this stopped."
    lost_error: str = "No worker picked this up in time."
    on_claim: Callable[[Job], None] | None = None
    on_finish: Callable[[Job], None] | None = None
    run: Callable[[Job, int], str | None] | None = None
    on_sweep: Callable[[], None] | None = None


_registry: dict[str, JobKind] = {}


def register(spec: JobKind) -> JobKind:
    """Declare a job kind (once per kind, at import of its module)."""
    if spec.on_stale not in (REQUEUE, FAIL):
        raise ValueError(f"unknown stale policy {spec.on_stale!r}")
    _registry[spec.kind] = spec
    return spec


def kind_of(kind: str) -> JobKind:
    try:
        return _registry[kind]
    except KeyError:
        raise LookupError(f"no job kind {kind!r} is registered") from None


def registered_kinds() -> dict[str, JobKind]:
    return dict(_registry)


# --- settings ---------------------------------------------------------------------------


def stale_seconds() -> float:
    return float(settings.PIWEB_JOB_STALE_SECONDS)


def heartbeat_seconds() -> float:
    explicit = settings.PIWEB_JOB_HEARTBEAT_SECONDS
    if explicit:
        return float(explicit)
    return max(0.5, min(5.0, stale_seconds() / 4))


def max_attempts() -> int:
    return settings.PIWEB_JOB_MAX_ATTEMPTS


# --- events -----------------------------------------------------------------------------


def session_of(job: Job) -> Session:
    """The session of a job kind that is always queued on one (runs, compactions,
    branch summaries)."""
    if job.session is None:
        raise ValueError(f"job {job.pk} ({job.kind}) has no session")
    return job.session


def job_event_data(job: Job) -> dict:
    """The `job_progress` websocket payload (built here only)."""
    result = None
    if job.result_entry_id:
        if Job.result_entry.is_cached(job) and job.result_entry is not None:
            result = job.result_entry.pi_id
        else:
            result = pi_id_of(job.result_entry_id)
    return {
        "job_id": str(job.id),
        "kind": job.kind,
        "status": job.status,
        "progress": job.progress or {},
        "error": job.error,
        "result_entry": result,
    }


def publish_progress(job: Job) -> None:
    """Tell every page on the session where `job` stands (after commit). A job with no
    session yet (an import) has no page to tell: its own page polls it."""
    if job.session_id is not None:
        events.publish(job.session_id, "job_progress", job_event_data(job))


# --- create and enqueue -----------------------------------------------------------------


def create(
    session: Session, kind: str, actor, activity: tuple[str, dict], *, send=True, **fields
) -> Job:
    """Store a queued job of `kind` on `session` (whose row the caller has locked),
    record `activity` (an action and its details) in the session's log, publish the job
    and enqueue it after the commit (unless `send` is false: the caller runs it itself).
    `fields` are the Job's own (params, prepared_leaf_pi_id, …)."""
    spec = kind_of(kind)
    fields.setdefault("progress", {"phase": "queued"})
    job = Job.objects.create(
        session=session,
        kind=spec.kind,
        status=Status.QUEUED,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
        **fields,
    )
    action, details = activity
    sessions.record_activity(session, actor, action, job=str(job.id), **details)
    publish_progress(job)
    if send:
        enqueue(job)
    return job


def enqueue(job: Job) -> None:
    """Send the job's task after commit (see the module doc for a broker that is down)."""
    spec = kind_of(job.kind)
    job_id = str(job.id)
    queue = queues.name(spec.queue(job) if callable(spec.queue) else spec.queue)

    def send():
        try:
            celery_app.send_task(spec.task, args=[job_id], queue=queue)
        except Exception as exc:
            log.warning("could not enqueue job %s: %s", job_id, exc)
            Job.objects.filter(pk=job_id, status=Status.QUEUED).update(
                progress={"phase": "queued", "enqueue_failed": True}
            )

    transaction.on_commit(send)


# --- claim, heartbeat, progress, finish -------------------------------------------------


def _worker_identity() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_dead(job: Job, now=None) -> bool:
    """Running, but its worker is gone (same host, process missing) or silent too long."""
    now = now or timezone.now()
    beat = job.heartbeat_at or job.started_at
    if beat is None or beat < now - timedelta(seconds=stale_seconds()):
        return True
    owner = (job.params or {}).get("worker") or {}
    if owner.get("host") == socket.gethostname() and owner.get("pid"):
        if owner["pid"] == os.getpid():
            return False
        return not _pid_alive(int(owner["pid"]))
    return False


def claim(job_id, *, kind: str | None = None) -> tuple[Job, int] | None:
    """queued -> running; returns the job and its attempt number (the claim token).

    None when there is nothing for this caller to do: the job is finished, or running
    in a live worker. A running job whose worker is dead is taken over, or failed when
    its kind never runs twice; a job past ``PIWEB_JOB_MAX_ATTEMPTS`` runs is failed.
    """
    with transaction.atomic():
        qs = Job.objects.select_for_update(of=("self",)).select_related("session")
        if kind is not None:
            qs = qs.filter(kind=kind)
        job = qs.filter(pk=job_id).first()
        if job is None or job.status not in Job.ACTIVE:
            return None
        spec = kind_of(job.kind)
        if job.status == Status.RUNNING:
            if not is_dead(job):
                return None  # another worker is on it and alive
            if spec.on_stale == FAIL:  # redelivered after its worker died
                finish(job, Status.FAILED, error=spec.stale_error, phase="failed")
                return None
        if job.attempts >= max_attempts():
            finish(job, Status.FAILED, error=_gave_up(job), phase="failed")
            return None
        now = timezone.now()
        job.status = Status.RUNNING
        job.attempts += 1
        job.started_at = job.started_at or now
        job.heartbeat_at = now
        job.error = ""
        job.params = {**(job.params or {}), "worker": _worker_identity()}
        job.progress = {"phase": "running", "attempt": job.attempts}
        if spec.on_claim is not None:
            spec.on_claim(job)
        job.save(
            update_fields=[
                *("model", "status", "attempts", "started_at", "heartbeat_at"),
                *("error", "params", "progress"),
            ]
        )
        publish_progress(job)
        return job, job.attempts


def _gave_up(job: Job) -> str:
    return f"Gave up after {job.attempts} attempts: the worker running it stopped."


class Heartbeat:
    """Touch heartbeat_at every few seconds while attempt `attempt` runs (own connection)."""

    def __init__(self, job_pk, attempt: int):
        self.job_pk, self.attempt = job_pk, attempt
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"heartbeat-{job_pk}", daemon=True)

    def _run(self):
        try:
            while not self.stop_event.wait(heartbeat_seconds()):
                try:
                    beat(self.job_pk, self.attempt)
                except Exception as exc:  # a missed beat is not fatal
                    log.warning("job heartbeat failed: %s", exc)
        finally:
            connection.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        self.thread.join(10)


def beat(job_pk, attempt: int) -> bool:
    """One heartbeat; False when the job is no longer this attempt's."""
    return bool(
        Job.objects.filter(pk=job_pk, status=Status.RUNNING, attempts=attempt).update(
            heartbeat_at=timezone.now()
        )
    )


def set_progress(job: Job, attempt: int, *, model: str | None = None, **progress) -> None:
    """Record progress (and the model used) for our own attempt only; publish it at once."""
    data = {**(job.progress or {}), **progress}
    fields = {"progress": data, "heartbeat_at": timezone.now()}
    if model is not None:
        fields["model"] = job.model = model[:200]
    updated = Job.objects.filter(pk=job.pk, status=Status.RUNNING, attempts=attempt).update(
        **fields
    )
    if updated:
        job.progress = data
        if job.session_id is not None:
            events.publish_now(job.session_id, "job_progress", job_event_data(job))


def finish(job: Job, status: str, *, error: str = "", entry: Entry | None = None, **progress):
    """Store the outcome of `job` (whose row the caller has locked) and publish it."""
    job.status = status
    job.error = error[:2000]
    job.finished_at = timezone.now()
    job.progress = {**(job.progress or {}), **progress}
    if entry is not None:
        job.result_entry = entry
    job.save(
        update_fields=[
            *("status", "error", "finished_at", "progress", "result_entry", "heartbeat_at"),
            "model",
        ]
    )
    publish_progress(job)
    spec = _registry.get(job.kind)
    if spec is not None and spec.on_finish is not None:
        spec.on_finish(job)


def finish_own(job: Job, attempt: int, status: str, **outcome) -> str | None:
    """Finish `job` if attempt `attempt` still holds it; None (and nothing written) if not."""
    with transaction.atomic():
        locked = Job.objects.select_for_update(of=("self",)).get(pk=job.pk)
        if locked.status != Status.RUNNING or locked.attempts != attempt:
            return None
        if job.model:
            locked.model = job.model[:200]
        finish(locked, status, **outcome)
    job.status = status
    return status


def fail_own(job: Job, attempt: int, message: str) -> str | None:
    return finish_own(job, attempt, Status.FAILED, error=message, phase="failed")


def cancel_queued(job: Job, error: str) -> bool:
    """Cancel `job` if nobody has claimed it yet."""
    with transaction.atomic():
        locked = (
            Job.objects.select_for_update(of=("self",)).filter(pk=job.pk, status=Status.QUEUED)
        ).first()
        if locked is None:
            return False
        finish(locked, Status.CANCELLED, error=error)
    return True


class RunFailed(Exception):
    """A kind's run failed with a message fit for the user (the job fails with it)."""


def run_job(job_id) -> str | None:
    """Claim one job and run its kind's ``run`` to the end, heartbeating. Idempotent.

    Returns the final status, or None when there was nothing for this call to do.
    """
    claimed = claim(job_id)
    if claimed is None:
        return None
    job, attempt = claimed
    spec = kind_of(job.kind)
    if spec.run is None:
        return fail_own(job, attempt, f"jobs of kind {job.kind!r} do not run here")
    try:
        with Heartbeat(job.pk, attempt):
            return spec.run(job, attempt)
    except RunFailed as exc:
        return fail_own(job, attempt, str(exc))
    except Exception as exc:
        log.exception("job %s crashed", job.pk)
        return fail_own(job, attempt, f"Internal error: {exc.__class__.__name__}")


# --- sweep ------------------------------------------------------------------------------


def _lost(job: Job, now) -> bool:
    """A queued job whose broker message may be lost (never sent, or never picked up)."""
    progress = job.progress or {}
    if progress.get("held"):
        return False  # waiting behind its user's other runs, on purpose
    if progress.get("enqueue_failed"):
        return True
    patience = stale_seconds() * 10
    if job.created_at > now - timedelta(seconds=patience):
        return False
    resent = progress.get("resent_at")
    return not (resent and now.timestamp() - resent < patience)


def sweep(session: Session | None = None, *, kinds=None) -> list[str]:
    """Deal with the active jobs whose worker died, as their kinds say (see module doc).

    The worker's sweeper thread calls this every few seconds; a service that must not
    be blocked by a dead job of its session (sending a chat message) may call it for that
    session. Returns the ids of the jobs it changed.
    """
    now = timezone.now()
    swept = []
    for pk in active_job_pks(kinds or _registry, session.pk if session is not None else None):
        with transaction.atomic():
            job = Job.objects.select_for_update(skip_locked=True).filter(pk=pk).first()
            if job is None or job.status not in Job.ACTIVE:
                continue
            if job.status == Status.RUNNING and not is_dead(job, now):
                continue
            if job.status == Status.QUEUED and not _lost(job, now):
                continue
            _sweep_one(job, now)
            swept.append(str(job.pk))
    if swept:
        log.warning("swept %d stale job(s): %s", len(swept), ", ".join(swept))
    if session is None:
        for spec in _registry.values():
            if spec.on_sweep is not None and (kinds is None or spec.kind in kinds):
                spec.on_sweep()
    return swept


def _sweep_one(job: Job, now) -> None:
    spec = kind_of(job.kind)
    unsent = (job.progress or {}).get("enqueue_failed")
    if job.status == Status.QUEUED and unsent:
        job.progress = {"phase": "queued", "resent_at": now.timestamp()}
        job.save(update_fields=["progress"])
        enqueue(job)
    elif spec.on_stale == FAIL:
        error = spec.stale_error if job.status == Status.RUNNING else spec.lost_error
        finish(job, Status.FAILED, error=error, phase="failed")
    elif job.attempts >= max_attempts():
        finish(job, Status.FAILED, error=_gave_up(job), phase="failed")
    else:
        job.status = Status.QUEUED
        job.heartbeat_at = None
        job.progress = {
            "phase": "requeued",
            "resent_at": now.timestamp(),
            "note": "The worker running this stopped; it was queued again.",
        }
        try:
            with transaction.atomic():
                job.save(update_fields=["status", "heartbeat_at", "progress"])
        except IntegrityError:  # a kind that keeps one queued job has a newer one waiting
            finish(job, Status.SUPERSEDED, phase="superseded")
            return
        publish_progress(job)
        enqueue(job)


def start_sweeper(interval: float | None = None) -> threading.Thread:
    """A daemon thread in the worker that sweeps stale jobs (no beat needed)."""
    interval = interval or max(1.0, stale_seconds() / 3)

    def loop():
        while True:
            try:
                close_old_connections()
                sweep()
            except Exception as exc:  # keep sweeping whatever happens
                log.warning("stale-job sweep failed: %s", exc)
            finally:
                connection.close()
            time.sleep(interval)

    thread = threading.Thread(target=loop, name="piweb-job-sweeper", daemon=True)
    thread.start()
    return thread
