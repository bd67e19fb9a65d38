"""How the context filled up along one branch: the data of the session page's chart.

For every assistant turn on the path root -> leaf: the context tokens the model was sent,
from its usage (pi's `calculateContextTokens`: totalTokens, else the four counts) when
the turn succeeded, else estimated as pi estimates (the last known usage plus chars/4
of every message after it). Compactions carry the tokens before (their `tokensBefore`)
and after (chars/4 of the context right after them: summary plus kept messages); branch
summaries and model changes are marked where they happen. `index` is the entry's
position on the path, so markers and turns share one axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .input_limits import js_number
from .messages import message_from_entry
from .tokens import calculate_context_tokens, estimate_tokens, get_assistant_usage


def _model_of(holder: dict[str, Any], model_field: str) -> str | None:
    provider, model = holder.get("provider"), holder.get(model_field)
    if not isinstance(model, str) or not model:
        return None
    return f"{provider}/{model}" if isinstance(provider, str) and provider else model


def _number(value: Any) -> int | None:
    """A finite count, or None (a `1e999` reads as Infinity, which no chart can place)."""
    value = js_number(value)  # as pi reads it: a 400-digit integer is a double or Infinity
    return int(value) if value is not None and math.isfinite(value) else None


def _in_context(entry: dict[str, Any]) -> dict[str, Any] | None:
    message = message_from_entry(entry)
    if not isinstance(message, dict):
        return None
    if message.get("role") == "bashExecution" and message.get("excludeFromContext"):
        return None
    return message


def _after_compaction(
    path: list[dict[str, Any]], index: int, position: dict[str | None, int]
) -> int:
    """chars/4 of the context right after the compaction at `index`: its summary plus the
    messages it keeps (from firstKeptEntryId up to it; none when that is itself)."""
    entry = path[index]
    tokens = estimate_tokens({"role": "compactionSummary", "summary": entry.get("summary")})
    first_kept = position.get(entry.get("firstKeptEntryId"), index)
    for kept in path[min(first_kept, index) : index]:
        if kept.get("type") == "compaction":
            continue
        message = _in_context(kept)
        if message is not None:
            tokens += estimate_tokens(message)
    return tokens


def context_timeline(path: list[dict[str, Any]]) -> dict[str, Any]:
    """Turns and markers along `path` (root first). See the module doc."""
    points: list[dict[str, Any]] = []
    compactions: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    model_changes: list[dict[str, Any]] = []
    running = 0  # the context as it stands after the entry just read
    model: str | None = None

    def set_model(new: str | None, index: int, eid: Any) -> None:
        nonlocal model
        if new and new != model:
            if model is not None:
                model_changes.append({"id": eid, "index": index, "model": new, "from": model})
            model = new

    position = {entry.get("id"): index for index, entry in enumerate(path)}
    for index, entry in enumerate(path):
        etype = entry.get("type")
        eid = entry.get("id")
        if etype == "compaction":
            after = _after_compaction(path, index, position)
            before = _number(entry.get("tokensBefore"))
            compactions.append(
                {
                    "id": eid,
                    "index": index,
                    "before": running if before is None else before,
                    "after": after,
                }
            )
            running = after
            continue
        if etype == "model_change":
            set_model(_model_of(entry, "modelId"), index, eid)
            continue
        message = _in_context(entry)
        if message is None:
            continue
        if etype == "message" and message.get("role") == "assistant":
            usage = get_assistant_usage(message)
            counted = calculate_context_tokens(usage) if isinstance(usage, dict) else 0
            set_model(
                _model_of(message, "responseModel") or _model_of(message, "model"), index, eid
            )
            tokens = _number(counted)
            if tokens is not None and tokens > 0:
                estimated, running = False, tokens
            else:
                estimated, running = True, running + estimate_tokens(message)
            points.append(
                {
                    "id": eid,
                    "index": index,
                    "tokens": running,
                    "estimated": estimated,
                    "model": model,
                }
            )
            continue
        running += estimate_tokens(message)
        if etype == "branch_summary":
            summaries.append({"id": eid, "index": index, "tokens": running})
    return {
        "points": points,
        "compactions": compactions,
        "branchSummaries": summaries,
        "modelChanges": model_changes,
        "current": running,
        "model": model,
    }


def _sets_context(entry: dict[str, Any]) -> bool:
    """True when the timeline's running figure restarts at `entry`: a compaction, or an
    assistant turn whose usage gives the context size (see `context_timeline`)."""
    etype = entry.get("type")
    if etype == "compaction":
        return True
    if etype != "message":
        return False
    message = _in_context(entry)
    if message is None or message.get("role") != "assistant":
        return False
    usage = get_assistant_usage(message)
    tokens = _number(calculate_context_tokens(usage)) if isinstance(usage, dict) else 0
    return tokens is not None and tokens > 0


def _model_set_by(entry: dict[str, Any]) -> str | None:
    """The model `entry` sets on the timeline, or None."""
    etype = entry.get("type")
    if etype == "model_change":
        return _model_of(entry, "modelId")
    if etype != "message":
        return None
    message = _in_context(entry)
    if message is None or message.get("role") != "assistant":
        return None
    return _model_of(message, "responseModel") or _model_of(message, "model")


def context_now(tail: list[dict[str, Any]], complete: bool) -> dict[str, Any] | None:
    """``{"current", "model"}`` of `context_timeline` over a whole path, from the path's
    last entries `tail` alone (`complete`: the tail is the whole path); None when the tail
    does not reach back far enough to tell (the caller reads a longer one).

    The running figure restarts at the last compaction or the last turn with usage, so
    only the entries from there on count (and, for a compaction, the ones it keeps)."""
    start = 0
    for index in range(len(tail) - 1, -1, -1):
        if _sets_context(tail[index]):
            start = index
            break
    else:
        if not complete:
            return None
    entry = tail[start] if tail else {}
    if entry.get("type") == "compaction":
        first_kept = entry.get("firstKeptEntryId")
        ids = [e.get("id") for e in tail[:start]]
        if first_kept in ids:
            start = ids.index(first_kept)
        elif not complete and first_kept != entry.get("id"):
            return None
    model = None
    for index in range(len(tail) - 1, -1, -1):
        model = _model_set_by(tail[index])
        if model:
            break
    if not model and not complete:
        return None
    return {"current": context_timeline(tail[start:])["current"], "model": model or None}


# The message types whose entries can add to the context (see message_from_entry).
_MESSAGE_TYPES = ("message", "custom_message", "branch_summary")


def context_now_from_rows(
    rows: list[tuple[Any, ...]], read: Callable[[list[int]], dict[int, dict[str, Any]]]
) -> dict[str, Any]:
    """``context_now(path, complete=True)`` from the path's rows instead of its payloads.

    `rows`: root→leaf, each (pk, id, type, role, pi_tokens, may restart, may set the
    model), where pi_tokens is the stored `entry_token_estimate` and the two flags are
    true for every entry that restarts the running figure (`_sets_context`) or sets the
    model (`_model_set_by`), and maybe some that do not. `read(pks)` gives payloads.

    Only payloads that can change the figure otherwise are read: the flagged entries from
    the end back to the first that really restarts / sets the model, a compaction's kept
    entries, and the few entries after the restart whose figure is not the stored
    estimate (non-message entries that hold a message, bash runs, rows without one). A
    plain message adds its stored estimate, which is `estimate_tokens` of its message."""

    def last(flag: int, test: Callable[[dict[str, Any]], Any]) -> tuple[int | None, Any, Any]:
        candidates = [i for i in range(len(rows) - 1, -1, -1) if rows[i][flag]]
        done, step = 0, 16
        while done < len(candidates):
            batch = candidates[done : done + step]
            payloads = read([rows[i][0] for i in batch])
            for i in batch:
                entry = payloads[rows[i][0]]
                found = test(entry)
                if found:
                    return i, entry, found
            done, step = done + step, step * 4
        return None, None, None

    start, start_entry, _ = last(5, _sets_context)
    _, _, model = last(6, _model_set_by)
    current, begin = 0, 0
    if start is not None:
        segment = [start_entry]
        if start_entry.get("type") == "compaction":
            first_kept = start_entry.get("firstKeptEntryId")
            ids = [row[1] for row in rows[:start]]
            if first_kept in ids:
                kept = [row[0] for row in rows[ids.index(first_kept) : start]]
                found = read(kept)
                segment = [found[pk] for pk in kept] + segment
        current, begin = context_timeline(segment)["current"], start + 1
    slow = []
    for pk, _id, etype, role, pi_tokens, _restart, _model in rows[begin:]:
        if etype == "message" and role != "bashExecution" and pi_tokens is not None:
            current += pi_tokens
        elif etype in _MESSAGE_TYPES:
            slow.append(pk)
    if slow:
        found = read(slow)
        current += sum(context_timeline([found[pk]])["current"] for pk in slow)
    return {"current": current, "model": model or None}
