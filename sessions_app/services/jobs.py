"""Compaction and branch-summary jobs: request, run (in a Celery worker), recover.

Public API (every function is safe to call twice; see "Guarantees")
---------------------------------------------------------------------
- ``request_compaction(session, *, actor, focus=None, trigger="manual") -> Job``
  Queue a compaction of the current leaf. At most one compaction is active per
  session: asking again while one is queued/running returns that job.
- ``request_branch_summary(session, *, old_leaf_pi_id, target_pi_id, actor,
  custom_instructions=None, replace_prompt=False) -> Job``
  Navigate with a summary. Moves the leaf AT ONCE to the navigation position (the
  target, or its parent when the target is a user message / custom_message) and
  queues a job that appends the branch_summary as a child of that position. A
  second identical request (double-click, two tabs) while the first is active
  returns the first job and moves nothing.
- ``maybe_compact_after_run(session) -> Job | None`` (chat: call after every agent
  run) queues a compaction when the context at the leaf is over
  ``context window - reserveTokens`` and compaction is enabled; else None.
- ``compact_for_overflow(session, *, actor=None) -> Job | None`` (chat: call on a
  context-overflow error, synchronously, in the worker). Returns None when compaction
  is disabled for the session (report the overflow, do not retry). Otherwise runs
  the compaction inline and returns the finished job: retry the model call ONCE only
  when ``job.status == "done" and job.result_entry_id``; a second overflow is an
  error for the user, never another compaction.
- ``run_job(job_id)`` the body of the Celery task (idempotent; see below).
- ``sweep_stale_jobs(session=None) -> list[str]`` requeue (or fail, after
  ``PIWEB_JOB_MAX_ATTEMPTS`` runs) jobs whose worker died. Called by the worker's
  sweeper thread, when the job panel renders, and when a job is requested.
- ``compaction_settings(session) -> CompactionSettings`` (global defaults from
  ``settings.PIWEB_COMPACTION`` overridden by ``Session.settings["compaction"]``),
  ``update_compaction_settings(session, *, actor, enabled, reserve_tokens,
  keep_recent_tokens)``.
- ``recent_jobs(session, limit=10)``, ``job_event_data(job)``.

Guarantees
----------
- A job's entry is written in ONE transaction with the session row and the job row
  locked; the job is re-checked there (still ours, still running, no result entry
  yet), so a redelivered or duplicated task never writes a second entry.
- Compaction: when the job finishes and the leaf has moved on along the same branch
  (the prepared leaf is an ancestor of, or equal to, the current leaf), the compaction
  is appended at the current leaf, which keeps every turn that arrived meanwhile
  (they sit after firstKeptEntryId). When the leaf is on another branch the job is
  marked superseded and nothing is written. Sending a message while a compaction runs
  therefore just proceeds; if an agent run of the session is queued or running when
  the summary is ready, the compaction waits for it to end before it attaches, so it
  never lands between a run's own entries (overflow recovery, called from inside the
  run, does not wait and appends at the run's position).
- Branch summary: appended as a child of the navigation position, always; the leaf
  moves onto it only when the leaf is still at that position.
- A run claims the job (queued -> running, ``attempts += 1``) and heartbeats every
  few seconds; the attempt number is the claim token. A job whose heartbeat is older
  than ``PIWEB_JOB_STALE_SECONDS`` (or whose worker process is gone) is requeued.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from sessions_app.context.compaction import CompactionSettings, prepare_compaction
from sessions_app.context.offline_summary import summarize_offline
from sessions_app.context.summaries import (
    NO_PRIOR_HISTORY,
    assemble_branch_summary,
    assemble_compaction_summary,
    branch_token_budget,
    build_branch_summary_request,
    plan_compaction_requests,
    prepare_branch_entries,
)
from sessions_app.context.tokens import should_compact
from sessions_app.context.tree import SessionTree
from sessions_app.models import Entry, Job, Session
from sessions_app.selectors.navigation import resolve_target
from sessions_app.services import events, summarizer, tree
from sessions_app.services.llm import context_window, resolve_profile
from sessions_app.services.model_input import model_input

log = logging.getLogger(__name__)

Status = Job.Status
SUMMARY_KINDS = (Job.Kind.COMPACTION, Job.Kind.BRANCH_SUMMARY)
# The jobs the sweeper looks after (agent runs have their own recovery, in chat.py).
SWEPT_KINDS = (*SUMMARY_KINDS, Job.Kind.COMPARE_SUMMARY)
TRIGGERS = ("manual", "threshold", "overflow")
FOCUS_MAX_CHARS = 4000


class JobError(ValueError):
    """Bad input to a job request (message is shown to the user)."""


# --- settings ---------------------------------------------------------------------------


def _stale_seconds() -> float:
    return float(settings.PIWEB_JOB_STALE_SECONDS)


def _heartbeat_seconds() -> float:
    explicit = settings.PIWEB_JOB_HEARTBEAT_SECONDS
    if explicit:
        return float(explicit)
    return max(0.5, min(5.0, _stale_seconds() / 4))


def _max_attempts() -> int:
    return settings.PIWEB_JOB_MAX_ATTEMPTS


def compaction_settings(session: Session) -> CompactionSettings:
    """Effective settings: global PIWEB_COMPACTION, then the session's overrides.

    ``Session.settings["compaction"]`` uses pi's keys (enabled, reserveTokens,
    keepRecentTokens).
    """
    glob = settings.PIWEB_COMPACTION
    merged = {
        "enabled": glob.get("enabled", True),
        "reserveTokens": glob.get("reserve_tokens", 16384),
        "keepRecentTokens": glob.get("keep_recent_tokens", 20000),
    }
    own = (session.settings or {}).get("compaction") or {}
    merged.update({k: v for k, v in own.items() if k in merged})
    return CompactionSettings.from_dict(merged)


def update_compaction_settings(
    session: Session, *, actor, enabled: bool, reserve_tokens: int, keep_recent_tokens: int
) -> CompactionSettings:
    """Store this session's compaction settings (validated; raises JobError)."""
    try:
        reserve_tokens, keep_recent_tokens = int(reserve_tokens), int(keep_recent_tokens)
    except (TypeError, ValueError) as exc:
        raise JobError("Token counts must be whole numbers.") from exc
    if not 1 <= reserve_tokens <= 10_000_000:
        raise JobError("Reserve tokens must be between 1 and 10,000,000.")
    if not 1 <= keep_recent_tokens <= 10_000_000:
        raise JobError("Keep-recent tokens must be between 1 and 10,000,000.")
    with transaction.atomic():
        locked = tree.lock_session(session.pk)
        data = dict(locked.settings or {})
        data["compaction"] = {
            "enabled": bool(enabled),
            "reserveTokens": reserve_tokens,
            "keepRecentTokens": keep_recent_tokens,
        }
        locked.settings = data
        locked.save(update_fields=["settings", "modified_at"])
        tree.record_activity(locked, actor, "compaction_settings", **data["compaction"])
    session.refresh_from_db()
    return compaction_settings(session)


# --- events -----------------------------------------------------------------------------


def job_event_data(job: Job) -> dict:
    """The `job_progress` websocket payload."""
    result = None
    if job.result_entry_id:
        if Job.result_entry.is_cached(job) and job.result_entry is not None:
            result = job.result_entry.pi_id
        else:
            result = (
                Entry.objects.filter(pk=job.result_entry_id).values_list("pi_id", flat=True).first()
            )
    return {
        "job_id": str(job.id),
        "kind": job.kind,
        "status": job.status,
        "progress": job.progress or {},
        "error": job.error,
        "result_entry": result,
    }


def publish_progress(job: Job) -> None:
    """Tell every page on the session where `job` stands (after commit)."""
    events.publish(job.session_id, "job_progress", job_event_data(job))


def recent_jobs(session: Session, limit: int = 10) -> list[Job]:
    return list(
        Job.objects.filter(session=session, kind__in=SUMMARY_KINDS)
        .select_related("result_entry")
        .order_by("-created_at")[:limit]
    )


# --- requesting -------------------------------------------------------------------------


def enqueue_job(job: Job) -> None:
    """Send the job's task after commit (a compaction, a branch summary or a compare
    summary). A broker that is down does not fail the request: the job stays queued,
    flagged, and the next sweep sends it again."""
    from sessions_app.tasks import run_compare_summary_job, run_summary_job

    task = run_compare_summary_job if job.kind == Job.Kind.COMPARE_SUMMARY else run_summary_job
    job_id = str(job.id)
    queue = settings.PIWEB_JOBS_QUEUE or None

    def send():
        try:
            task.apply_async(args=[job_id], queue=queue)
        except Exception as exc:
            log.warning("could not enqueue job %s: %s", job_id, exc)
            Job.objects.filter(pk=job_id, status=Status.QUEUED).update(
                progress={"phase": "queued", "enqueue_failed": True}
            )

    transaction.on_commit(send)


def _active_compaction(session_pk: int) -> Job | None:
    return (
        Job.objects.filter(session_id=session_pk, kind=Job.Kind.COMPACTION, status__in=Job.ACTIVE)
        .order_by("created_at")
        .first()
    )


def _create_compaction(
    session: Session,
    *,
    actor,
    focus: str | None,
    trigger: str,
    enqueue: bool,
    leaf_pi_id: str | None = None,
) -> Job:
    """Create (or return the active) compaction job; caller holds the session lock.

    `leaf_pi_id` (overflow recovery of a run): compact the run's branch at that entry
    and append there, whatever the session's leaf is.
    """
    existing = _active_compaction(session.pk)
    if existing is not None:
        return existing
    cfg = compaction_settings(session)
    params = {"trigger": trigger, "focus": focus or None, "settings": cfg.to_dict()}
    if leaf_pi_id is not None:
        params["append_at"] = leaf_pi_id
    prepared = leaf_pi_id or (session.leaf.pi_id if session.leaf_id else None)
    job = Job.objects.create(
        session=session,
        kind=Job.Kind.COMPACTION,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
        prepared_leaf_pi_id=prepared,
        params=params,
        progress={"phase": "queued"},
    )
    tree.record_activity(session, actor, "compaction_requested", job=str(job.id), trigger=trigger)
    publish_progress(job)
    if enqueue:
        enqueue_job(job)
    return job


def request_compaction(
    session: Session, *, actor, focus: str | None = None, trigger: str = "manual"
) -> Job:
    """Queue a compaction of the session at its current leaf (see module doc)."""
    if trigger not in TRIGGERS:
        raise JobError(f"Unknown compaction trigger {trigger!r}.")
    focus = (focus or "").strip() or None
    if focus and len(focus) > FOCUS_MAX_CHARS:
        raise JobError(f"The focus text is limited to {FOCUS_MAX_CHARS} characters.")
    sweep_stale_jobs(session=session)
    with transaction.atomic():
        locked = tree.lock_session(session.pk)
        if locked.leaf_id is None:
            raise JobError("This session has no entries at the current position to compact.")
        return _create_compaction(locked, actor=actor, focus=focus, trigger=trigger, enqueue=True)


def request_branch_summary(
    session: Session,
    *,
    old_leaf_pi_id: str | None,
    target_pi_id: str,
    actor,
    custom_instructions: str | None = None,
    replace_prompt: bool = False,
) -> Job:
    """Navigate to `target_pi_id` now and queue the summary of the branch left behind.

    The leaf moves at once to the navigation position (the target, or the target's
    parent for a user message / custom_message); the job appends the branch_summary
    as a child of that position later.
    """
    custom = (custom_instructions or "").strip() or None
    if custom and len(custom) > FOCUS_MAX_CHARS:
        raise JobError(f"Custom instructions are limited to {FOCUS_MAX_CHARS} characters.")
    if replace_prompt and not custom:
        raise JobError("Replacing the prompt needs custom instructions.")
    sweep_stale_jobs(session=session)
    with transaction.atomic():
        locked = tree.lock_session(session.pk)
        # Dedupe on (session, kind, old leaf, target) among active jobs. A second click
        # computed from the server's leaf has the first job's position as its "old leaf".
        for active in Job.objects.filter(
            session=locked,
            kind=Job.Kind.BRANCH_SUMMARY,
            status__in=Job.ACTIVE,
            target_pi_id=target_pi_id,
        ).order_by("created_at"):
            if old_leaf_pi_id in (
                active.prepared_leaf_pi_id,
                (active.params or {}).get("position"),
            ):
                return active
        target = Entry.objects.filter(session=locked, pi_id=target_pi_id).first()
        if target is None:
            raise JobError(f"No entry {target_pi_id} in this session.")
        if (
            old_leaf_pi_id
            and not Entry.objects.filter(session=locked, pi_id=old_leaf_pi_id).exists()
        ):
            raise JobError(f"No entry {old_leaf_pi_id} in this session.")
        nav = resolve_target(locked, target)
        position = nav.leaf
        job = Job.objects.create(
            session=locked,
            kind=Job.Kind.BRANCH_SUMMARY,
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
            prepared_leaf_pi_id=old_leaf_pi_id,
            target_pi_id=target_pi_id,
            params={
                "position": position,
                "custom_instructions": custom,
                "replace_prompt": bool(replace_prompt and custom),
                "editor_text": nav.editor_text,
                "settings": compaction_settings(locked).to_dict(),
            },
            progress={"phase": "queued"},
        )
        current = locked.leaf.pi_id if locked.leaf_id else None
        if current != position:
            tree.set_leaf(locked, position, actor=actor)
        tree.record_activity(
            locked, actor, "branch_summary_requested", job=str(job.id), target=target_pi_id
        )
        publish_progress(job)
        enqueue_job(job)
    session.refresh_from_db()
    return job


def context_tokens_at_leaf(session: Session) -> int:
    """Context size at the leaf: last assistant usage + chars/4 of what follows."""
    return model_input(session).context_tokens


def maybe_compact_after_run(session: Session, *, actor=None) -> Job | None:
    """Threshold trigger, for the chat loop after every agent run.

    Queues a compaction (a Celery job; returns at once) when compaction is enabled
    for the session and the context at the leaf is over window - reserveTokens.
    Returns the job, or None when no compaction is needed or allowed.
    """
    session = Session.objects.get(pk=session.pk)
    cfg = compaction_settings(session)
    if not cfg.enabled or session.leaf_id is None:
        return None
    seen = model_input(session)
    if not should_compact(seen.context_tokens, seen.window, cfg):
        return None
    return request_compaction(session, actor=actor, trigger="threshold")


def compact_for_overflow(
    session: Session, *, actor=None, leaf_pi_id: str | None = None, wait_timeout: float = 600
) -> Job | None:
    """Overflow recovery, synchronous (call it from the worker running the turn).

    `leaf_pi_id`: the run's current position (its last entry). Pass it: the run's
    branch is compacted and the compaction is appended there even if the user moved
    the session's leaf elsewhere meanwhile (the leaf follows only if it was there).
    Without it, the session's leaf is used.

    Returns None when compaction is disabled for this session (pi used to compact
    anyway; we do not): report the overflow to the user. Otherwise compacts now —
    taking over a queued compaction of this session, or waiting for a running one —
    and returns the finished job. Retry the turn ONCE, and only when
    ``job.status == "done" and job.result_entry_id`` (continue the run under
    ``job.result_entry``); never compact again for a second overflow.
    """
    cfg = compaction_settings(Session.objects.get(pk=session.pk))
    if not cfg.enabled:
        return None
    sweep_stale_jobs(session=session)
    with transaction.atomic():
        locked = tree.lock_session(session.pk)
        leaf_pi_id = leaf_pi_id or (locked.leaf.pi_id if locked.leaf_id else None)
        if leaf_pi_id is None:
            return None
        leaf = Entry.objects.filter(session=locked, pi_id=leaf_pi_id).first()
        if leaf is None:
            raise JobError(f"No entry {leaf_pi_id} in this session.")
        existing = _active_compaction(locked.pk)
        if (
            existing is not None
            and existing.status == Status.QUEUED
            and not (
                existing.prepared_leaf_pi_id
                and _is_ancestor_or_self(locked, existing.prepared_leaf_pi_id, leaf)
            )
        ):
            # A queued compaction of another branch: ours is the urgent one.
            _finish(
                existing,
                Status.SUPERSEDED,
                phase="superseded",
                note="Replaced by an overflow compaction of the branch being run.",
            )
        job = _create_compaction(
            locked,
            actor=actor,
            focus=None,
            trigger="overflow",
            enqueue=False,
            leaf_pi_id=leaf_pi_id,
        )
        if (job.params or {}).get("trigger") != "overflow":
            # Taking over a threshold/manual compaction of this branch: it must not wait
            # for the agent run calling us (its commit re-reads the params under lock),
            # and it appends at the run's position.
            job.params = {
                **job.params,
                "trigger": "overflow",
                "first_trigger": job.params.get("trigger"),
                "append_at": leaf_pi_id,
            }
            Job.objects.filter(pk=job.pk).update(params=job.params)
    run_job(job.id)
    deadline = time.monotonic() + wait_timeout
    job.refresh_from_db()
    while job.status in Job.ACTIVE and time.monotonic() < deadline:
        time.sleep(0.2)  # another worker holds it; it heartbeats or gets swept
        sweep_stale_jobs(session=session)
        run_job(job.id)  # no-op unless it went back to the queue
        job.refresh_from_db()
    session.refresh_from_db()
    return job


# --- running ----------------------------------------------------------------------------


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


def _is_dead(job: Job, now=None) -> bool:
    """Running, but its worker is gone (same host, process missing) or silent too long."""
    now = now or timezone.now()
    beat = job.heartbeat_at or job.started_at or job.created_at
    if beat < now - timedelta(seconds=_stale_seconds()):
        return True
    owner = (job.params or {}).get("worker") or {}
    if owner.get("host") == socket.gethostname() and owner.get("pid"):
        if owner["pid"] == os.getpid():
            return False
        return not _pid_alive(int(owner["pid"]))
    return False


def _set_progress(job: Job, attempt: int, *, model: str | None = None, **progress) -> None:
    """Record progress (and the model used) for our own run only; publish it at once."""
    data = {**(job.progress or {}), **progress}
    fields = {"progress": data, "heartbeat_at": timezone.now()}
    if model is not None:
        fields["model"] = job.model = model[:200]
    updated = Job.objects.filter(pk=job.pk, status=Status.RUNNING, attempts=attempt).update(
        **fields
    )
    if updated:
        job.progress = data
        events.publish_now(job.session_id, "job_progress", job_event_data(job))


def _finish(job: Job, status: str, *, error: str = "", entry: Entry | None = None, **progress):
    job.status = status
    job.error = error[:2000]
    job.finished_at = timezone.now()
    job.progress = {**(job.progress or {}), **progress}
    if entry is not None:
        job.result_entry = entry
    job.save(
        update_fields=["status", "error", "finished_at", "progress", "result_entry", "heartbeat_at"]
    )
    publish_progress(job)


def _claim(job_id) -> tuple[Job, int] | None:
    with transaction.atomic():
        job = (
            Job.objects.select_for_update(of=("self",))
            .select_related("session")
            .filter(pk=job_id)
            .first()
        )
        if job is None or job.status not in Job.ACTIVE:
            return None
        if job.status == Status.RUNNING and not _is_dead(job):
            return None  # another worker is on it and alive
        if job.attempts >= _max_attempts():
            _finish(
                job,
                Status.FAILED,
                error=f"Gave up after {job.attempts} attempts: the worker running it stopped.",
                phase="failed",
            )
            return None
        now = timezone.now()
        job.status = Status.RUNNING
        job.attempts += 1
        job.started_at = job.started_at or now
        job.heartbeat_at = now
        job.error = ""
        job.params = {**(job.params or {}), "worker": _worker_identity()}
        profile = resolve_profile(job.session.model_profile)
        job.model = (profile.label if profile else "offline summarizer")[:200]
        job.progress = {"phase": "summarizing", "attempt": job.attempts}
        job.save(
            update_fields=[
                "model",
                "status",
                "attempts",
                "started_at",
                "heartbeat_at",
                "error",
                "params",
                "progress",
            ]
        )
        publish_progress(job)
        return job, job.attempts


class Heartbeat:
    """Touch heartbeat_at every few seconds while the job runs (own DB connection)."""

    def __init__(self, job_pk, attempt: int):
        self.job_pk, self.attempt = job_pk, attempt
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"heartbeat-{job_pk}", daemon=True)

    def _run(self):
        try:
            while not self.stop_event.wait(_heartbeat_seconds()):
                try:
                    Job.objects.filter(
                        pk=self.job_pk, status=Status.RUNNING, attempts=self.attempt
                    ).update(heartbeat_at=timezone.now())
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


class _Superseded(Exception):
    pass


def run_job(job_id) -> str | None:
    """Run one compaction / branch-summary job to the end. Idempotent.

    Returns the final status, or None when there was nothing for this call to do
    (already finished, or running alive elsewhere).
    """
    claimed = _claim(job_id)
    if claimed is None:
        return None
    job, attempt = claimed
    try:
        with Heartbeat(job.pk, attempt):
            if job.kind == Job.Kind.COMPACTION:
                return _run_compaction(job, attempt)
            if job.kind == Job.Kind.BRANCH_SUMMARY:
                return _run_branch_summary(job, attempt)
            raise summarizer.SummaryError(f"jobs of kind {job.kind!r} do not run here")
    except summarizer.SummaryError as exc:
        return _fail_own(job, attempt, str(exc))
    except Exception as exc:
        log.exception("job %s crashed", job.pk)
        return _fail_own(job, attempt, f"Internal error: {exc.__class__.__name__}")


def _fail_own(job: Job, attempt: int, message: str) -> str | None:
    with transaction.atomic():
        locked = Job.objects.select_for_update().get(pk=job.pk)
        if locked.status != Status.RUNNING or locked.attempts != attempt:
            return None
        _finish(locked, Status.FAILED, error=message, phase="failed")
    return Status.FAILED


def _summarize(job: Job, attempt: int, requests: list[dict | None], offline) -> tuple[list, dict]:
    """Run model requests (None entries stay None) or the offline fallback."""
    profile = resolve_profile(job.session.model_profile)
    if profile is None:
        return offline(), {"offline": True}
    texts = []
    spent = 0.0
    calls = 0
    wanted = [r for r in requests if r is not None]
    for request in requests:
        if request is None:
            texts.append(None)
            continue

        def on_retry(n, delay, message):
            _set_progress(
                job,
                attempt,
                phase="retrying",
                retry=n,
                retry_in=round(delay, 2),
                last_error=message,
            )

        if len(wanted) > 1:  # the claim already said "summarizing" for a single call
            _set_progress(job, attempt, phase="summarizing", step=len(texts) + 1, steps=len(wanted))
        done = summarizer.complete(profile, request, on_retry=on_retry)
        spent += done.model_seconds
        calls += done.calls
        texts.append(done.text)
    return texts, {"offline": False, "model_ms": round(spent * 1000, 1), "model_calls": calls}


def _is_ancestor_or_self(session: Session, ancestor_pi_id: str, leaf: Entry | None) -> bool:
    if leaf is None:
        return False
    if leaf.pi_id == ancestor_pi_id:
        return True
    ancestor_pk = (
        Entry.objects.filter(session=session, pi_id=ancestor_pi_id)
        .values_list("pk", flat=True)
        .first()
    )
    return ancestor_pk is not None and ancestor_pk in tree.path_entry_pks(leaf.pk)


def _run_compaction(job: Job, attempt: int) -> str | None:
    session = job.session
    cfg = CompactionSettings.from_dict((job.params or {}).get("settings"))
    focus = (job.params or {}).get("focus")
    prepared = job.prepared_leaf_pi_id
    path, estimates = tree.load_path_estimates(session, prepared) if prepared else ([], [])
    prep = prepare_compaction(path, cfg, estimates=estimates)
    if prep is None or (not prep.messages_to_summarize and not prep.turn_prefix_messages):
        return _complete(job, attempt, None, note="Nothing to compact at this point.")
    files = prep.file_lists()
    split = prep.is_split_turn and bool(prep.turn_prefix_messages)

    def offline():
        if split:
            history = (
                summarize_offline(prep.messages_to_summarize, prep.previous_summary, focus)
                if prep.messages_to_summarize or prep.previous_summary
                else NO_PRIOR_HISTORY
            )
            return [history, summarize_offline(prep.turn_prefix_messages, None, None)]
        return [summarize_offline(prep.messages_to_summarize, prep.previous_summary, focus), None]

    plan = plan_compaction_requests(prep, custom_instructions=focus)
    texts, meta = _summarize(job, attempt, [plan["history"], plan["turnPrefix"]], offline)
    history_text = texts[0] if texts[0] is not None else (plan["historyPlaceholder"] or "")
    summary = assemble_compaction_summary(
        history_text, texts[1] if split else None, files["readFiles"], files["modifiedFiles"]
    )
    details = {"readFiles": files["readFiles"], "modifiedFiles": files["modifiedFiles"]}
    if meta.get("offline"):
        details["offline"] = True
    payload = {
        "type": "compaction",
        "summary": summary,
        "firstKeptEntryId": prep.first_kept_entry_id,
        "tokensBefore": prep.tokens_before,
        "details": details,
    }
    return _complete(job, attempt, payload, meta=meta, split_turn=split)


def _run_branch_summary(job: Job, attempt: int) -> str | None:
    session = job.session
    params = job.params or {}
    position = params.get("position")
    old_leaf = job.prepared_leaf_pi_id
    old_path = tree.load_path(session, old_leaf) if old_leaf else []
    new_path = tree.load_path(session, position) if position else []
    seen: dict[str, dict] = {}
    for entry in [*new_path, *old_path]:
        seen[entry["id"]] = entry
    collected = SessionTree(list(seen.values())).collect_entries_for_branch_summary(
        old_leaf, position
    )
    if not collected["entries"]:
        return _complete(job, attempt, None, note="Nothing to summarize: no branch was left.")
    cfg = CompactionSettings.from_dict(params.get("settings"))
    profile = resolve_profile(session.model_profile)
    budget = branch_token_budget(context_window(profile), cfg.reserve_tokens)
    prep = prepare_branch_entries(collected["entries"], budget)
    if not prep.messages:
        return _complete(job, attempt, None, note="Nothing to summarize in the branch left.")
    files = prep.file_lists()
    custom = params.get("custom_instructions")
    replace = bool(params.get("replace_prompt"))

    def offline():
        return [summarize_offline(prep.messages, None, custom, kind="branch")]

    request = build_branch_summary_request(
        prep.messages, custom_instructions=custom, replace_instructions=replace
    )
    texts, meta = _summarize(job, attempt, [request], offline)
    summary = assemble_branch_summary(texts[0], files["readFiles"], files["modifiedFiles"])
    details = {"readFiles": files["readFiles"], "modifiedFiles": files["modifiedFiles"]}
    if meta.get("offline"):
        details["offline"] = True
    payload = {
        "type": "branch_summary",
        "fromId": position if position is not None else "root",
        "summary": summary,
        "details": details,
    }
    return _complete(job, attempt, payload, meta=meta)


_WAIT = object()


def _waits_for_agent_runs(job: Job) -> bool:
    # An overflow compaction is called from inside the run itself: never wait for it.
    return job.kind == Job.Kind.COMPACTION and (job.params or {}).get("trigger") != "overflow"


def _agent_run_active(session_pk: int) -> bool:
    return Job.objects.filter(
        session_id=session_pk, kind=Job.Kind.AGENT_RUN, status__in=Job.ACTIVE
    ).exists()


def _complete(job: Job, attempt: int, payload: dict | None, *, note: str = "", meta=None, **extra):
    """Write the entry (or nothing) and finish the job, in one locked transaction.

    A compaction that finishes while an agent run of the session is queued or running
    waits for the run to end (heartbeating), then appends at the leaf the run left:
    appending mid-run would put the compaction between the run's own entries.
    """
    limit = time.monotonic() + settings.PIWEB_JOB_WAIT_FOR_RUN_SECONDS
    waiting = False
    while True:
        result = _complete_once(job, attempt, payload, note=note, meta=meta, **extra)
        if result is not _WAIT:
            return result
        if time.monotonic() > limit:
            return _fail_own(job, attempt, "An agent run on this session did not finish in time.")
        if not waiting:
            waiting = True
            _set_progress(job, attempt, phase="waiting_for_run")
        time.sleep(0.5)


def _complete_once(job: Job, attempt: int, payload: dict | None, *, note: str, meta, **extra):
    meta = meta or {}
    with transaction.atomic():
        session = tree.lock_session(job.session_id)
        locked = (
            Job.objects.select_for_update(of=("self",)).select_related("created_by").get(pk=job.pk)
        )
        if locked.status != Status.RUNNING or locked.attempts != attempt or locked.result_entry_id:
            return None  # someone else took it over (we were presumed dead): write nothing
        if payload is not None and _waits_for_agent_runs(locked) and _agent_run_active(session.pk):
            return _WAIT
        if payload is None:
            _finish(locked, Status.DONE, phase="done", note=note, **meta)
            return Status.DONE
        if locked.kind == Job.Kind.COMPACTION:
            append_at = (locked.params or {}).get("append_at")
            if append_at:  # overflow recovery: the run's position, wherever the leaf is
                leaf = Entry.objects.filter(session=session, pi_id=append_at).first()
                move = (
                    session.leaf_id is not None and leaf is not None and session.leaf_id == leaf.pk
                )
            else:
                leaf = session.leaf
                move = True
            if locked.prepared_leaf_pi_id is None or not _is_ancestor_or_self(
                session, locked.prepared_leaf_pi_id, leaf
            ):
                _finish(
                    locked,
                    Status.SUPERSEDED,
                    phase="superseded",
                    note="The session moved to another branch while this ran; nothing was written.",
                    **meta,
                )
                return Status.SUPERSEDED
            entry = tree.append_entry(
                session, payload, parent_pi_id=leaf.pi_id, move_leaf=move, actor=locked.created_by
            )
            tree.record_activity(
                session, locked.created_by, "compacted", job=str(locked.pk), entry=entry.pi_id
            )
        else:
            position = locked.params.get("position")
            current = session.leaf.pi_id if session.leaf_id else None
            entry = tree.append_entry(
                session,
                payload,
                parent_pi_id=position,
                move_leaf=current == position,
                actor=locked.created_by,
            )
            tree.record_activity(
                session,
                locked.created_by,
                "branch_summarized",
                job=str(locked.pk),
                entry=entry.pi_id,
            )
        moved = session.leaf_id == entry.pk  # append_entry refreshed `session`
        _finish(locked, Status.DONE, entry=entry, phase="done", leaf_moved=moved, **meta, **extra)
        return Status.DONE


# --- recovery ---------------------------------------------------------------------------


def sweep_stale_jobs(session: Session | None = None) -> list[str]:
    """Requeue jobs whose worker died; fail them after PIWEB_JOB_MAX_ATTEMPTS runs.

    Running jobs are dead when their heartbeat is older than PIWEB_JOB_STALE_SECONDS
    or their worker process (on this host) is gone. Queued jobs that nobody picked up
    for 10 x that time are re-sent (their broker message may be lost).
    """
    now = timezone.now()
    stale = timedelta(seconds=_stale_seconds())
    qs = Job.objects.filter(kind__in=SWEPT_KINDS, status__in=Job.ACTIVE)
    if session is not None:
        qs = qs.filter(session_id=session.pk)
    candidates = list(qs.values_list("pk", "status", "created_at", "progress"))
    if not candidates:
        return []
    swept = []
    for pk, status, created_at, progress in candidates:
        unsent = (progress or {}).get("enqueue_failed")
        if status == Status.QUEUED and not unsent and created_at > now - stale * 10:
            continue
        with transaction.atomic():
            job = Job.objects.select_for_update(skip_locked=True).filter(pk=pk).first()
            if job is None or job.status not in Job.ACTIVE:
                continue
            if job.status == Status.RUNNING and not _is_dead(job, now):
                continue
            if job.status == Status.QUEUED and not (job.progress or {}).get("enqueue_failed"):
                if job.created_at > now - stale * 10:
                    continue
                if (job.progress or {}).get("resent_at") and now.timestamp() - job.progress[
                    "resent_at"
                ] < stale.total_seconds() * 10:
                    continue
            if job.attempts >= _max_attempts():
                _finish(
                    job,
                    Status.FAILED,
                    error=f"Gave up after {job.attempts} attempts: the worker running it stopped.",
                    phase="failed",
                )
            else:
                job.status = Status.QUEUED
                job.heartbeat_at = None
                job.progress = {
                    "phase": "requeued",
                    "resent_at": now.timestamp(),
                    "note": "The worker running this stopped; it was queued again.",
                }
                job.save(update_fields=["status", "heartbeat_at", "progress"])
                publish_progress(job)
                enqueue_job(job)
            swept.append(str(job.pk))
    if swept:
        log.warning("swept %d stale job(s): %s", len(swept), ", ".join(swept))
    return swept


def start_sweeper(interval: float | None = None) -> threading.Thread:
    """A daemon thread that sweeps stale jobs (the worker starts one; no beat needed)."""
    interval = interval or max(1.0, _stale_seconds() / 3)

    def loop():
        while True:
            try:
                close_old_connections()
                sweep_stale_jobs()
            except Exception as exc:  # keep sweeping whatever happens
                log.warning("stale-job sweep failed: %s", exc)
            finally:
                connection.close()
            time.sleep(interval)

    thread = threading.Thread(target=loop, name="piweb-job-sweeper", daemon=True)
    thread.start()
    return thread
