"""The branch-summary job: navigate with a summary of the branch left behind.

The leaf moves AT ONCE to the navigation position (the target, or its parent when the
target is a user message / custom_message) and the job appends the branch_summary as a
child of that position later, always; the leaf moves onto it only when the leaf is still
at that position. A second identical request (double-click, two tabs) while the first is
active returns the first job and moves nothing.
"""

from __future__ import annotations

from django.db import transaction

from sessions_app.core.compaction import CompactionSettings
from sessions_app.core.messages import context_from_path
from sessions_app.core.offline_summary import summarize_offline
from sessions_app.core.summaries import (
    assemble_branch_summary,
    branch_token_budget,
    build_branch_summary_request,
    prepare_branch_entries,
)
from sessions_app.core.tree import SessionTree
from sessions_app.models import Entry, Job, Session
from sessions_app.selectors import paths
from sessions_app.selectors.entries import entry_exists, find_entry
from sessions_app.selectors.jobs import active_branch_summaries
from sessions_app.selectors.llm.windows import (
    branch_summary_reserve,
    compaction_settings,
    session_window,
)
from sessions_app.selectors.navigation import resolve_target
from sessions_app.services import sessions
from sessions_app.services.jobs import lifecycle
from sessions_app.services.jobs.lifecycle import JobError
from sessions_app.services.jobs.summaries import (
    check_instructions,
    complete,
    file_details,
    on_claim,
    priced,
    summarize,
)


def _active_duplicate(session: Session, old_leaf_pi_id: str | None, target_pi_id: str):
    # Dedupe on (session, kind, old leaf, target) among active jobs. A second click
    # computed from the server's leaf has the first job's position as its "old leaf".
    for active in active_branch_summaries(session, target_pi_id):
        if old_leaf_pi_id in (active.prepared_leaf_pi_id, (active.params or {}).get("position")):
            return active
    return None


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
    Its refusals are conflicts with the page that asked (409)."""
    custom = check_instructions(custom_instructions, "Custom instructions are")
    if replace_prompt and not custom:
        raise JobError("Replacing the prompt needs custom instructions.", 409)
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        duplicate = _active_duplicate(locked, old_leaf_pi_id, target_pi_id)
        if duplicate is not None:
            return duplicate
        target = find_entry(locked, target_pi_id)
        if target is None:
            raise JobError(f"No entry {target_pi_id} in this session.", 409)
        if old_leaf_pi_id and not entry_exists(locked, old_leaf_pi_id):
            raise JobError(f"No entry {old_leaf_pi_id} in this session.", 409)
        nav = resolve_target(locked, target)
        position = nav.leaf
        if locked.leaf_pi_id != position:
            sessions.set_leaf(locked, position, actor=actor)
        params = {
            "position": position,
            "custom_instructions": custom,
            "replace_prompt": bool(replace_prompt and custom),
            "editor_text": nav.editor_text,
            "settings": compaction_settings(locked).to_dict(),
        }
        job = lifecycle.create(
            locked,
            Job.Kind.BRANCH_SUMMARY,
            actor,
            ("branch_summary_requested", {"target": target_pi_id}),
            prepared_leaf_pi_id=old_leaf_pi_id,
            target_pi_id=target_pi_id,
            params=params,
        )
    session.refresh_from_db()
    return job


def run(job: Job, attempt: int) -> str | None:
    """Summarize the entries of the branch left behind, then attach at the position."""
    session = lifecycle.session_of(job)
    params = job.params or {}
    position = params.get("position")
    old_leaf = job.prepared_leaf_pi_id
    old_path = paths.load_path(session, old_leaf) if old_leaf else []
    new_path = paths.load_path(session, position) if position else []
    seen: dict[str, dict] = {}
    for entry in [*new_path, *old_path]:
        seen[entry["id"]] = entry
    collected = SessionTree(list(seen.values())).collect_entries_for_branch_summary(
        old_leaf, position
    )
    if not collected["entries"]:
        return complete(
            job, attempt, None, _attach, note="Nothing to summarize: no branch was left."
        )
    cfg = CompactionSettings.from_dict(params.get("settings"))
    recorded = context_from_path(new_path)["model"] if new_path else None
    window = session_window(session, recorded)
    budget = branch_token_budget(window, branch_summary_reserve(cfg.reserve_tokens))
    prep = prepare_branch_entries(collected["entries"], budget)
    if not prep.messages:
        return complete(
            job, attempt, None, _attach, note="Nothing to summarize in the branch left."
        )
    files = prep.file_lists()
    custom = params.get("custom_instructions")
    replace = bool(params.get("replace_prompt"))

    def offline():
        return [summarize_offline(prep.messages, None, custom, kind="branch")]

    request = build_branch_summary_request(
        prep.messages, custom_instructions=custom, replace_instructions=replace
    )
    texts, meta = summarize(job, attempt, [request], offline)
    payload = {
        "type": "branch_summary",
        "fromId": position if position is not None else "root",
        "summary": assemble_branch_summary(texts[0], files["readFiles"], files["modifiedFiles"]),
        "details": file_details(files, meta),
        **priced(meta),
    }
    return complete(job, attempt, payload, _attach, meta=meta)


def _attach(session: Session, job: Job, payload: dict, meta: dict) -> Entry:
    position = job.params.get("position")
    current = session.leaf_pi_id
    entry = sessions.append_entry(
        session, payload, parent_pi_id=position, move_leaf=current == position, actor=job.created_by
    )
    sessions.record_activity(
        session, job.created_by, "branch_summarized", job=str(job.pk), entry=entry.pi_id
    )
    return entry


KIND = lifecycle.register(
    lifecycle.JobKind(kind=Job.Kind.BRANCH_SUMMARY, on_claim=on_claim, run=run)
)
