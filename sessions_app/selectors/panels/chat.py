"""The chat panel: the transcript of the current branch, the live run, the model."""

from __future__ import annotations

from datetime import datetime

from sessions_app.core.file_changes import reconstruct, summarize
from sessions_app.core.input_limits import bounded, display_value
from sessions_app.core.pi_config import supported_thinking_levels
from sessions_app.core.tool_headline import duration_text
from sessions_app.rendering import Part, page_budget, render_entries_within
from sessions_app.selectors import paths, prompt_templates
from sessions_app.selectors.changes import change_counts
from sessions_app.selectors.jobs import queued_messages
from sessions_app.selectors.llm.catalog import (
    HOW_TO_CONFIGURE,
    find_model,
    pi_settings,
    resolve_profile,
)
from sessions_app.selectors.llm.keys import ModelUnavailable
from sessions_app.selectors.llm.resolution import available_models, thinking_for
from sessions_app.selectors.model_input import model_input
from sessions_app.selectors.panels.composer import composer_context
from sessions_app.selectors.runs import active_run, active_runs, run_covering, run_state
from sessions_app.selectors.scores import badges_by_entry

# The transcript shows the branch's last entries, at most this many and this many
# characters of HTML (or the page's budget, if smaller); the earlier ones come a chunk of
# the same size at a time when asked ("Show earlier", `before=`). A long branch's page
# stays small: its first load is what the reader waits for (bench/ui_browser_bench.py).
TRANSCRIPT_LIMIT = 50
TRANSCRIPT_CHARS = 80_000


def transcript_context(session, limit: int = TRANSCRIPT_LIMIT, before: str | None = None) -> dict:
    """The transcript (the chat panel and `chat_transcript`): the path's last entries, or
    with `before` (an entry's pi id) the chunk of the path that comes before that entry
    (`earlier`: a piece to put above the entries shown)."""
    hidden, tail = paths.load_path_tail(session, limit, before)
    leaf = tail[-1].get("id") if tail else ""  # the branch's end, shown or not
    # Imported text may hold lone surrogates: display_value makes it safe to show.
    tail = [
        display_value(p) for p in tail if p.get("type") not in ("label", "session_info", "custom")
    ]
    # Newest first within the budget: older entries join the "not shown" count.
    rendered = render_entries_within(tail, min(page_budget(), TRANSCRIPT_CHARS))
    files = change_counts(session)
    if not files:  # no snapshots (an imported session): its edit/write calls, replayed
        for pi_id, found in reconstruct(tail, session.cwd).items():
            files[pi_id] = {**summarize(found), "reconstructed": True}
    entries = []
    for p, parts in zip(tail, rendered, strict=True):
        if parts is None:
            continue
        message = p.get("message")
        role = message.get("role", "") if isinstance(message, dict) else ""
        entries.append(
            {
                "payload": p,
                "id": p.get("id"),
                "type": bounded(p.get("type", "")),
                "role": bounded(role),
                "parts": parts,
                "files": files.get(p.get("id") or ""),
            }
        )
    shown = len(entries)
    if before is not None:  # the calls at a chunk's end were answered after it
        entries = tool_cards(entries, running=None)
    else:
        entries = tool_cards(entries, running=active_run(session) is not None)
    return {
        "entries": entries,
        # Scores show beside the answers; like comments they never reach the model.
        "score_badges": badges_by_entry(session, key="entry__pi_id"),
        "hidden": hidden + len(tail) - shown,
        "first": entries[0]["id"] if entries else "",  # ("Show earlier" asks before it)
        "leaf": leaf,
        "earlier": before is not None,
    }


def _when(payload: dict) -> datetime | None:
    stamp = payload.get("timestamp")
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


def tool_cards(entries: list[dict], running: bool | None = False) -> list[dict]:
    """Each tool call of the transcript as one card: its result moves under the call
    (`extra["result"]`), with a status (ok, error, running, or no result when a later
    message came without one, or the branch ends without one and no run is going) and how
    long it ran (from the entry before the result to the result). A tool-result entry
    left with nothing else to show leaves the list. `running` None: the entries are a
    chunk that more of the branch follows, so calls at its end get no status."""
    calls: dict[str, Part] = {}
    out: list[dict] = []
    before = None  # the time of the entry before this one
    for e in entries:
        when = _when(e["payload"])
        if e["role"] == "toolResult":
            rest = []
            for part in e["parts"]:
                call = calls.pop(part.extra.get("tool_call_id") or "", None)
                if part.kind == "tool_result" and call is not None:
                    call.extra["result"] = part
                    call.extra["status"] = "error" if part.extra.get("is_error") else "ok"
                    if when and before:
                        call.extra["duration"] = duration_text((when - before).total_seconds())
                else:
                    rest.append(part)
            e = {**e, "parts": rest}
            if rest or e.get("files"):
                out.append(e)
        else:
            for call in calls.values():  # a message came: those calls got no result
                call.extra["status"] = "missing"
            calls = {}
            for part in e["parts"]:
                if part.kind == "tool_call":
                    part.extra["status"] = "running"
                    calls[part.extra.get("id") or f"#{len(calls)}"] = part
            out.append(e)
        before = when or before
    for call in calls.values():  # the branch ends on calls: a run answers them, or none
        if running is None:
            call.extra.pop("status", None)
        elif not running:
            call.extra["status"] = "missing"
    return out


def model_context(session, user) -> dict:
    """The model and thinking level at the leaf, and the models this user can pick,
    grouped by provider (the chat header's picker)."""
    seen = model_input(session)
    recorded = seen.recorded_model
    problem = ""
    try:
        resolved = seen.resolved(user)
    except ModelUnavailable as exc:
        resolved, problem = None, str(exc)
    model = resolved.model if resolved is not None else None
    if model is None and recorded:
        model = find_model(recorded.get("provider"), recorded.get("modelId"))
    current = f"{model['provider']}/{model['id']}" if model else ""
    choices = available_models(user)
    return {
        "resolved": resolved,
        "model": model,
        "current": current,
        "problem": problem,
        "groups": picker_groups(choices),
        "known_current": any(c.ref == current for c in choices),
        **_thinking_context(seen, user, model),
    }


# The picker's first group when pi's settings.json names `enabledModels`: the models pi
# cycles through with Ctrl+P come first, the rest (still allowed, as in pi's /model) after.
SCOPED_GROUP = "enabledModels"


def picker_groups(choices) -> list[tuple[str, list]]:
    """(label, choices) groups of the model picker: the scoped models first when pi's
    settings scope them, then every other model by provider."""
    scoped = [c for c in choices if c.enabled] if pi_settings().enabled_models else []
    scoped_refs = {c.ref for c in scoped}
    by_provider: dict[str, list] = {}
    for choice in choices:
        if choice.ref not in scoped_refs:
            by_provider.setdefault(choice.provider, []).append(choice)
    return ([(SCOPED_GROUP, scoped)] if scoped else []) + sorted(by_provider.items())


def _thinking_context(seen, user, model) -> dict:
    thinking = seen.thinking_level(user)
    return {
        "thinking": thinking_for(model, thinking) if model else thinking,
        "levels": supported_thinking_levels(model) if model else ["off"],
        "reasoning": bool(model and model.get("reasoning")),
    }


def model_notice(models: dict, can_edit: bool = False) -> dict:
    """Whether the model at the leaf can run, and if not why and how to fix it (the notice
    above the composer), from :func:`model_context`. `fix`: for an editor, the runnable
    model one click switches to: the same model id from another provider if there is one,
    else the picker's first."""
    configured = models["resolved"] is not None
    fix = None
    if not configured and can_edit:
        choices = [c for _, group in models["groups"] for c in group]
        wanted = models["current"].partition("/")[2]
        fix = next((c for c in choices if c.id == wanted), choices[0] if choices else None)
    return {
        "configured": configured,
        "problem": models["problem"],
        "how_to_configure": models["problem"] or HOW_TO_CONFIGURE,
        "fix": fix,
    }


def chat_context(access, user=None) -> dict:
    """The whole chat panel of the session page (`chat` in its template)."""
    session = access.session
    profile = resolve_profile(session.model_profile)
    job = active_run(session)
    models = model_context(session, user if user is not None else session.owner)
    return {
        "profile": profile,
        "models": models,
        "model_notice": model_notice(models, access.can_edit),
        "can_edit": access.can_edit,
        "composer": composer_context(
            access,
            models,
            prompt_templates.slash_choices(session, user) if access.can_edit and user else None,
        ),
        "active_job": job,
        "run_state": (run_state(session, job) if job else None) or None,
        "queue": queued_messages(session, job),
        **transcript_context(session),
    }


def run_context(session) -> dict:
    """The in-progress runs, for a page or socket that (re)connects: the run on the
    session's leaf (`active`, `status`, `run`) and every branch's (`runs`, by id; each
    page keeps to the run of the branch it shows)."""
    runs = active_runs(session)
    job = run_covering(session, runs, session.leaf_pi_id)
    states = {str(r.pk): run_state(session, r) for r in runs}
    return {
        "active": str(job.pk) if job else None,
        "status": job.status if job else None,
        "run": states.get(str(job.pk)) if job else None,
        "runs": states,
    }
