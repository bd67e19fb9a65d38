"""What the summary kinds (compaction, branch summary) share: storing the compaction
settings, the model calls with visible progress and retries, and attaching the result entry."""

from __future__ import annotations

import time

from django.conf import settings
from django.db import transaction

from sessions_app.core.compaction import CompactionSettings
from sessions_app.core.costs import combine_usage
from sessions_app.models import Entry, Job, Session
from sessions_app.selectors import paths
from sessions_app.selectors.entries import entry_pk
from sessions_app.selectors.llm.windows import compaction_settings
from sessions_app.selectors.model_input import summary_profile
from sessions_app.selectors.runs import run_active
from sessions_app.services import sessions, summarizer
from sessions_app.services.jobs import lifecycle
from sessions_app.services.jobs.lifecycle import JobError

Status = Job.Status
FOCUS_MAX_CHARS = 4000
OFFLINE_MODEL = "offline summarizer"


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
        locked = sessions.lock_session(session.pk)
        data = dict(locked.settings or {})
        data["compaction"] = {
            "enabled": bool(enabled),
            "reserveTokens": reserve_tokens,
            "keepRecentTokens": keep_recent_tokens,
        }
        locked.settings = data
        locked.save(update_fields=["settings", "modified_at"])
        sessions.record_activity(locked, actor, "compaction_settings", **data["compaction"])
    session.refresh_from_db()
    return compaction_settings(session)


def check_instructions(text: str | None, what: str) -> str | None:
    text = (text or "").strip() or None
    if text and len(text) > FOCUS_MAX_CHARS:
        raise JobError(f"{what} limited to {FOCUS_MAX_CHARS} characters.")
    return text


def model_max_tokens(session: Session, user=None) -> int | None:
    """The max output tokens of the model a summary of this session calls (None: no
    model), which caps pi's summary budgets (the core's request builders take it)."""
    profile = summary_profile(session, user)
    if profile is None:
        return None
    value = getattr(profile, "max_output", None) or getattr(profile, "max_tokens", None)
    return int(value) if value else None


def on_claim(job: Job) -> None:
    """A summary job names its model (or the offline summarizer) when it starts."""
    profile = summary_profile(job.session, job.created_by)
    job.model = (profile.label if profile else OFFLINE_MODEL)[:200]
    job.progress = {"phase": "summarizing", "attempt": job.attempts}


def summarize(job: Job, attempt: int, requests: list[dict | None], offline) -> tuple[list, dict]:
    """Run model requests (None entries stay None) or the offline fallback.

    The meta's `usage` is what the calls cost together (pi's combineUsage), for the
    entry to carry; the offline fallback calls no model and has none."""
    profile = summary_profile(job.session, job.created_by)
    if profile is None:
        return offline(), {"offline": True}
    texts: list[str | None] = []
    usage = None
    spent = 0.0
    calls = 0
    wanted = [r for r in requests if r is not None]

    def on_retry(n, delay, message):
        lifecycle.set_progress(
            job, attempt, phase="retrying", retry=n, retry_in=round(delay, 2), last_error=message
        )

    for request in requests:
        if request is None:
            texts.append(None)
            continue
        if len(wanted) > 1:  # the claim already said "summarizing" for a single call
            lifecycle.set_progress(
                job, attempt, phase="summarizing", step=len(texts) + 1, steps=len(wanted)
            )
        try:
            done = summarizer.complete(profile, request, on_retry=on_retry)
        except summarizer.SummaryError as exc:
            raise lifecycle.RunFailed(str(exc)) from exc
        spent += done.model_seconds
        calls += done.calls
        if done.usage is not None:
            usage = done.usage if usage is None else combine_usage(usage, done.usage)
        texts.append(done.text)
    meta = {"offline": False, "model_ms": round(spent * 1000, 1), "model_calls": calls}
    return texts, {**meta, "usage": usage} if usage is not None else meta


def file_details(files: dict, meta: dict) -> dict:
    details = {"readFiles": files["readFiles"], "modifiedFiles": files["modifiedFiles"]}
    if meta.get("offline"):
        details["offline"] = True
    return details


def priced(meta: dict) -> dict:
    """The entry's `usage` field (pi's shape) taken out of a summary's meta: the
    summary's cost lives on its entry (counted once, by the usage recorder), not in
    the job's progress."""
    usage = meta.pop("usage", None)
    return {"usage": usage} if usage is not None else {}


def is_ancestor_or_self(session: Session, ancestor_pi_id: str, leaf: Entry | None) -> bool:
    if leaf is None:
        return False
    if leaf.pi_id == ancestor_pi_id:
        return True
    ancestor_pk = entry_pk(session, ancestor_pi_id)
    return ancestor_pk is not None and ancestor_pk in paths.path_entry_pks(leaf.pk)


_WAIT = object()


def complete(
    job: Job,
    attempt: int,
    payload: dict | None,
    attach,
    *,
    waits=None,
    note: str = "",
    meta=None,
    **extra,
) -> str | None:
    """Write the entry (or nothing) and finish the job, in one locked transaction.

    `attach(session, locked_job, payload, meta)` appends the entry and returns it, or
    finishes the job itself (superseded) and returns None. When `waits(locked_job)` is
    true (asked under the lock: the params may have changed meanwhile), a result that is
    ready while an agent run of the session is queued or running waits for the run to
    end (heartbeating): appending mid-run would put it between the run's own entries.
    """
    limit = time.monotonic() + settings.PIWEB_JOB_WAIT_FOR_RUN_SECONDS
    waiting = False
    while True:
        result = _complete_once(job, attempt, payload, attach, waits, note, meta, extra)
        if result is not _WAIT:
            return result
        if time.monotonic() > limit:
            return lifecycle.fail_own(
                job, attempt, "An agent run on this session did not finish in time."
            )
        if not waiting:
            waiting = True
            lifecycle.set_progress(job, attempt, phase="waiting_for_run")
        time.sleep(0.5)


def _complete_once(job, attempt, payload, attach, waits, note, meta, extra):
    meta = meta or {}
    with transaction.atomic():
        session = sessions.lock_session(job.session_id)
        locked = (
            Job.objects.select_for_update(of=("self",)).select_related("created_by").get(pk=job.pk)
        )
        if locked.status != Status.RUNNING or locked.attempts != attempt or locked.result_entry_id:
            return None  # someone else took it over (we were presumed dead): write nothing
        if payload is not None and waits and waits(locked) and run_active(session.pk):
            return _WAIT
        if payload is None:
            lifecycle.finish(locked, Status.DONE, phase="done", note=note, **meta)
            return Status.DONE
        entry = attach(session, locked, payload, meta)
        if entry is None:
            return locked.status
        moved = session.leaf_id == entry.pk  # append_entry refreshed `session`
        lifecycle.finish(
            locked, Status.DONE, entry=entry, phase="done", leaf_moved=moved, **meta, **extra
        )
        return Status.DONE
