"""The compaction job: request one (by hand, over the threshold, on overflow), run it,
attach the compaction entry.

At most one compaction is active per session: asking again while one is queued or
running returns that job. When the job finishes and the leaf has moved on along the same
branch (the prepared leaf is an ancestor of, or equal to, the current leaf), the
compaction is appended at the current leaf, which keeps every turn that arrived meanwhile
(they sit after firstKeptEntryId). When the leaf is on another branch the job is marked
superseded and nothing is written. If an agent run of the session is queued or running
when the summary is ready, the compaction waits for it to end before it attaches, so it
never lands between a run's own entries (overflow recovery, called from inside the run,
does not wait and appends at the run's position).
"""

from __future__ import annotations

import time

from django.db import transaction

from sessions_app.core.compaction import CompactionSettings, prepare_compaction
from sessions_app.core.offline_summary import summarize_offline
from sessions_app.core.summaries import (
    NO_PRIOR_HISTORY,
    assemble_compaction_summary,
    plan_compaction_requests,
)
from sessions_app.core.tokens import should_compact
from sessions_app.models import Entry, Job, Session
from sessions_app.selectors import paths
from sessions_app.selectors.entries import find_entry
from sessions_app.selectors.jobs import active_compaction
from sessions_app.selectors.llm.windows import compaction_settings
from sessions_app.selectors.model_input import model_input
from sessions_app.selectors.sessions import session_by_pk
from sessions_app.services import sessions
from sessions_app.services.jobs import lifecycle
from sessions_app.services.jobs.lifecycle import JobError
from sessions_app.services.jobs.summaries import (
    check_instructions,
    complete,
    file_details,
    is_ancestor_or_self,
    model_max_tokens,
    on_claim,
    priced,
    summarize,
)

Status = Job.Status
TRIGGERS = ("manual", "threshold", "overflow")


def _create(
    session: Session,
    *,
    actor,
    focus: str | None,
    trigger: str,
    send: bool,
    leaf_pi_id: str | None = None,
) -> Job:
    """Create (or return the active) compaction job; caller holds the session lock.

    `leaf_pi_id` (overflow recovery of a run): compact the run's branch at that entry
    and append there, whatever the session's leaf is.
    """
    existing = active_compaction(session.pk)
    if existing is not None:
        return existing
    params = {
        "trigger": trigger,
        "focus": focus or None,
        "settings": compaction_settings(session).to_dict(),
    }
    if leaf_pi_id is not None:
        params["append_at"] = leaf_pi_id
    prepared = leaf_pi_id or session.leaf_pi_id
    activity = ("compaction_requested", {"trigger": trigger})
    fields = {"params": params, "prepared_leaf_pi_id": prepared}
    return lifecycle.create(session, Job.Kind.COMPACTION, actor, activity, send=send, **fields)


def request_compaction(
    session: Session, *, actor, focus: str | None = None, trigger: str = "manual"
) -> Job:
    """Queue a compaction of the session at its current leaf (see module doc)."""
    if trigger not in TRIGGERS:
        raise JobError(f"Unknown compaction trigger {trigger!r}.")
    focus = check_instructions(focus, "The focus text is")
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        if locked.leaf_id is None:
            raise JobError("This session has no entries at the current position to compact.")
        return _create(locked, actor=actor, focus=focus, trigger=trigger, send=True)


def context_tokens_at_leaf(session: Session) -> int:
    """Context size at the leaf: last assistant usage + chars/4 of what follows."""
    return model_input(session).context_tokens


def maybe_compact_after_run(session: Session, *, actor=None) -> Job | None:
    """Threshold trigger, for the agent run when it ends.

    Queues a compaction (returns at once) when compaction is enabled for the session
    and the context at the leaf is over window - reserveTokens. Returns the job, or
    None when no compaction is needed or allowed.
    """
    session = session_by_pk(session.pk)
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
    """Overflow recovery, synchronous (called from the worker running the turn).

    `leaf_pi_id`: the run's current position (its last entry). The run's branch is
    compacted and the compaction is appended there even if the user moved the session's
    leaf elsewhere meanwhile (the leaf follows only if it was there). Without it, the
    session's leaf is used.

    Returns None when compaction is disabled for this session (pi used to compact
    anyway; we do not): report the overflow to the user. Otherwise compacts now —
    taking over a queued compaction of this session, or waiting for a running one —
    and returns the finished job. Retry the turn ONCE, and only when
    ``job.status == "done" and job.result_entry_id``; never compact again for a second
    overflow.
    """
    cfg = compaction_settings(session_by_pk(session.pk))
    if not cfg.enabled:
        return None
    lifecycle.sweep(session=session, kinds=[Job.Kind.COMPACTION])
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        leaf_pi_id = leaf_pi_id or locked.leaf_pi_id
        if leaf_pi_id is None:
            return None
        leaf = find_entry(locked, leaf_pi_id)
        if leaf is None:
            raise JobError(f"No entry {leaf_pi_id} in this session.")
        existing = active_compaction(locked.pk)
        if (
            existing is not None
            and existing.status == Status.QUEUED
            and not (
                existing.prepared_leaf_pi_id
                and is_ancestor_or_self(locked, existing.prepared_leaf_pi_id, leaf)
            )
        ):
            # A queued compaction of another branch: ours is the urgent one.
            lifecycle.finish(
                existing,
                Status.SUPERSEDED,
                phase="superseded",
                note="Replaced by an overflow compaction of the branch being run.",
            )
        job = _create(
            locked, actor=actor, focus=None, trigger="overflow", send=False, leaf_pi_id=leaf_pi_id
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
    lifecycle.run_job(job.id)
    deadline = time.monotonic() + wait_timeout
    job.refresh_from_db()
    while job.status in Job.ACTIVE and time.monotonic() < deadline:
        time.sleep(0.2)  # another worker holds it; it heartbeats or gets swept
        lifecycle.sweep(session=session, kinds=[Job.Kind.COMPACTION])
        lifecycle.run_job(job.id)  # no-op unless it went back to the queue
        job.refresh_from_db()
    session.refresh_from_db()
    return job


def run(job: Job, attempt: int) -> str | None:
    """Summarize what `prepare_compaction` chose at the prepared leaf, then attach."""
    session = lifecycle.session_of(job)
    cfg = CompactionSettings.from_dict((job.params or {}).get("settings"))
    focus = (job.params or {}).get("focus")
    prepared = job.prepared_leaf_pi_id
    path, estimates = paths.load_path_estimates(session, prepared) if prepared else ([], [])
    prep = prepare_compaction(path, cfg, estimates=estimates)
    if prep is None or (not prep.messages_to_summarize and not prep.turn_prefix_messages):
        return complete(job, attempt, None, _attach, note="Nothing to compact at this point.")
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

    plan = plan_compaction_requests(
        prep,
        custom_instructions=focus,
        model_max_tokens=model_max_tokens(session, job.created_by),
    )
    texts, meta = summarize(job, attempt, [plan["history"], plan["turnPrefix"]], offline)
    history_text = texts[0] if texts[0] is not None else (plan["historyPlaceholder"] or "")
    summary = assemble_compaction_summary(
        history_text, texts[1] if split else None, files["readFiles"], files["modifiedFiles"]
    )
    payload = {
        "type": "compaction",
        "summary": summary,
        "firstKeptEntryId": prep.first_kept_entry_id,
        "tokensBefore": prep.tokens_before,
        "details": file_details(files, meta),
        **priced(meta),
    }
    return complete(job, attempt, payload, _attach, waits=_waits, meta=meta, split_turn=split)


def _waits(job: Job) -> bool:
    # An overflow compaction is called from inside the run itself: never wait for it.
    return (job.params or {}).get("trigger") != "overflow"


def _attach(session: Session, job: Job, payload: dict, meta: dict) -> Entry | None:
    append_at = (job.params or {}).get("append_at")
    if append_at:  # overflow recovery: the run's position, wherever the leaf is
        leaf = find_entry(session, append_at)
        move = session.leaf_id is not None and leaf is not None and session.leaf_id == leaf.pk
    else:
        leaf = session.leaf
        move = True
    if (
        leaf is None
        or job.prepared_leaf_pi_id is None
        or not is_ancestor_or_self(session, job.prepared_leaf_pi_id, leaf)
    ):
        lifecycle.finish(
            job,
            Status.SUPERSEDED,
            phase="superseded",
            note="The session moved to another branch while this ran; nothing was written.",
            **meta,
        )
        return None
    entry = sessions.append_entry(
        session, payload, parent_pi_id=leaf.pi_id, move_leaf=move, actor=job.created_by
    )
    sessions.record_activity(
        session, job.created_by, "compacted", job=str(job.pk), entry=entry.pi_id
    )
    return entry


KIND = lifecycle.register(lifecycle.JobKind(kind=Job.Kind.COMPACTION, on_claim=on_claim, run=run))
