"""Building the model's context at a leaf, and converting it to LLM messages.

Pure functions on plain dicts in pi's JSON shapes (session format v3).  Keys that
JavaScript would leave ``undefined`` are simply absent from the dicts we return.

Public API
----------
- ``build_session_context(entries, leaf_id=UNSET, by_id=None, *, list_index=None)`` ->
  ``{"messages": [...], "thinkingLevel": str, "model": {...} | None}``
- ``context_from_path(path, unique_ids=False)`` -> same result for an already root-first path
  (what the service layer should call after loading a path from the database)
- ``collect_messages(path, start, end, mode, view=None)`` -> messages of a slice of a path
  (``view=path_view(path)`` shares one scan of the entry types between calls)
- ``convert_to_llm(messages)`` -> list of user / assistant / toolResult messages
- ``bash_execution_to_text(msg)``
- ``message_from_entry(entry)`` (entry -> agent message or ``None``)
- ``iso_to_ms(timestamp)`` (JS ``new Date(s).getTime()``; ``None`` for NaN)
- framing constants ``COMPACTION_SUMMARY_PREFIX`` / ``_SUFFIX`` and
  ``BRANCH_SUMMARY_PREFIX`` / ``_SUFFIX``

Messages in the returned context are the *same* dict objects as in the entries
(like pi, no copies are made); treat them as read-only.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from .jsutil import iso_to_ms
from .list_index import ListIndex
from .tree import UNSET, index_with_ids, path_to_root

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "UNSET",
    "bash_execution_to_text",
    "build_session_context",
    "context_edits",
    "context_entries",
    "convert_to_llm",
    "create_branch_summary_message",
    "create_compaction_summary_message",
    "create_custom_message",
    "iso_to_ms",
    "message_from_entry",
]

# The framing strings are part of the context format (quoted by the seed document).
COMPACTION_SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"

Entry = dict[str, Any]
Message = dict[str, Any]

# ---------------------------------------------------------------------------
# Agent-message constructors (entry -> message)
# ---------------------------------------------------------------------------


def create_branch_summary_message(summary: Any, from_id: Any, timestamp: Any) -> Message:
    return {
        "role": "branchSummary",
        "summary": summary,
        "fromId": from_id,
        "timestamp": iso_to_ms(timestamp),
    }


def create_compaction_summary_message(summary: Any, tokens_before: Any, timestamp: Any) -> Message:
    msg: Message = {"role": "compactionSummary", "summary": summary}
    if tokens_before is not UNSET:
        msg["tokensBefore"] = tokens_before
    msg["timestamp"] = iso_to_ms(timestamp)
    return msg


def create_custom_message(entry: Entry) -> Message:
    """custom_message entry -> ``{role: custom, customType, content, display, details?, timestamp}``."""
    return _message_from_entry("custom", entry, ("customType", "content", "display", "details"))


def _branch_summary_from_entry(entry: Entry) -> Message:
    return _message_from_entry("branchSummary", entry, ("summary", "fromId"))


def _compaction_summary_from_entry(entry: Entry) -> Message:
    return _message_from_entry("compactionSummary", entry, ("summary", "tokensBefore"))


def _message_from_entry(role: str, entry: Entry, keys: tuple[str, ...]) -> Message:
    """The role, the entry's ``keys`` it has (in that order), then its timestamp."""
    msg: Message = {"role": role}
    for key in keys:
        if key in entry:
            msg[key] = entry[key]
    msg["timestamp"] = iso_to_ms(entry.get("timestamp"))
    return msg


def message_from_entry(entry: Entry, *, include_compaction: bool = False) -> Message | None:
    """The agent message an entry contributes, or ``None``.

    message -> its message; custom_message -> custom; branch_summary -> branchSummary
    (even with an empty summary); compaction -> compactionSummary only when
    ``include_compaction``.
    """
    etype = entry.get("type")
    if etype == "message":
        return entry.get("message")
    if etype == "custom_message":
        return create_custom_message(entry)
    if etype == "branch_summary":
        return _branch_summary_from_entry(entry)
    if etype == "compaction" and include_compaction:
        return _compaction_summary_from_entry(entry)
    return None


# ---------------------------------------------------------------------------
# build_session_context
# ---------------------------------------------------------------------------


def _append_context_message(messages: list[Message], entry: Entry) -> None:
    etype = entry.get("type")
    if etype == "message":
        message: Any = entry.get("message")  # (as pi: whatever the entry holds)
        messages.append(message)
    elif etype == "custom_message":
        messages.append(create_custom_message(entry))
    elif etype == "branch_summary" and entry.get("summary"):
        messages.append(_branch_summary_from_entry(entry))


def build_session_context(
    entries: list[Entry],
    leaf_id: Any = UNSET,
    by_id: dict[str, Entry] | None = None,
    *,
    list_index: ListIndex | None = None,
) -> dict[str, Any]:
    """What the model sees at ``leaf_id`` (pi's ``buildSessionContext``).

    ``leaf_id``: ``UNSET`` (default) -> the last entry; ``None`` -> empty context
    ("before the first entry"); an id that is unknown (or empty) -> the last entry.
    ``by_id`` may be passed to avoid re-indexing; so may ``list_index``, the
    ``ListIndex`` of ``entries`` (``SessionTree.list_index``).  Without either: when
    the entries up to the leaf are its path, one loop checks that and collects the
    context; on a branched list a ``ListIndex`` is built for the call (one pass), or
    when the ids do not allow one an id map.  Raises ``TreeCycleError`` if the parent
    chain loops.
    """
    empty: dict[str, Any] = {"messages": [], "thinkingLevel": "off", "model": None}
    if leaf_id is None:
        return empty
    if not entries:
        return empty
    if by_id is None:
        if list_index is None:
            # Fast path: the entries up to the leaf are the root-first path to it (the
            # leaf is the last entry, or later entries went off on other branches) ->
            # one loop that checks the chain and collects the context; no index.
            if leaf_id is UNSET or not leaf_id or leaf_id == entries[-1].get("id"):
                stop = len(entries)
            else:
                stop = _leaf_stop(entries, leaf_id)
            if stop:
                prefix = entries if stop == len(entries) else entries[:stop]
                if not _recent_branch_point(prefix):
                    context = _chain_context(prefix, entries[stop:])
                    if context is not None:
                        return context
        # A branched list: the path is a few runs of the list's columns.
        index = ListIndex.build(entries) if list_index is None else list_index
        if index is not None:
            leaf = index.position(leaf_id) if leaf_id is not UNSET and leaf_id else -1
            runs = index.runs(len(entries) - 1 if leaf < 0 else leaf)
            if runs is not None:
                return _context_of_view(_PathView.of_columns(*index.columns(runs)), True)
        by_id, _ = index_with_ids(entries)
    leaf_entry = by_id.get(leaf_id) if leaf_id is not UNSET and leaf_id else None
    if leaf_entry is None:
        leaf_entry = entries[-1]
    path = path_to_root(by_id, leaf_entry)
    return context_from_path(path)


_get_type = itemgetter("type")
_get_message = itemgetter("message")
_get_id = itemgetter("id")
_get_parent = itemgetter("parentId")


def _indices(values: list[Any], value: Any) -> list[int]:
    """All positions of ``value`` in ``values`` (C-speed scanning via list.index)."""
    out = []
    pos = -1
    index = values.index
    try:
        while True:
            pos = index(value, pos + 1)
            out.append(pos)
    except ValueError:
        return out


class _PathView:
    """A path's special positions (its entries whose type is not ``message``), its
    types when they were read, and its messages column when one was given."""

    __slots__ = ("path", "types", "specials", "messages")

    def __init__(self, path: list[Entry]):
        self.path = path
        types: list[Any] = list(map(_get_type, path))  # KeyError -> caller falls back
        self.types: list[Any] | None = types
        kinds = set(types)
        kinds.discard("message")
        specials: list[int] = []
        for kind in kinds:
            specials.extend(_indices(types, kind))
        specials.sort()
        self.specials = specials
        self.messages: list[Any] | None = None

    @classmethod
    def of_columns(cls, path: list[Entry], messages: list[Any], specials: list[int]) -> _PathView:
        """A view from ``ListIndex.columns``: the path, the ``message`` of each message
        entry (None for the others) and the sorted positions of the others."""
        view = cls.__new__(cls)
        view.path = path
        view.types = None
        view.specials = specials
        view.messages = messages
        return view

    def message_at(self, i: int) -> Any:
        """The ``message`` of the message entry at ``i``."""
        return self.path[i]["message"] if self.messages is None else self.messages[i]

    def collect(self, out: list[Message], start: int, end: int, mode: str) -> None:
        """Append the messages of ``path[start:end]`` to ``out``.

        mode ``"context"``: custom_message + non-empty branch_summary (buildSessionContext);
        ``"compaction"``: custom_message + every branch_summary (prepareCompaction);
        ``"branch"``: also compaction summaries, and tool results are dropped.
        """
        path = self.path
        column = self.messages
        specials = self.specials
        lo = bisect_left(specials, start)
        hi = bisect_left(specials, end, lo)
        pos = start
        for k in range(lo, hi):
            i = specials[k]
            if pos < i:
                out += _path_messages(path, column, pos, i)
            _append_special(out, path[i], mode)
            pos = i + 1
        if pos == 0 and end == len(path):
            out += _path_messages(path, column, 0, end)
        elif pos < end:
            out += _path_messages(path, column, pos, end)


def _path_messages(path: list[Entry], column: list[Any] | None, start: int, end: int) -> list[Any]:
    """The messages of the message entries ``path[start:end]`` (from ``column`` if given)."""
    if column is not None:
        return column if start == 0 and end == len(column) else column[start:end]
    return list(map(_get_message, path if start == 0 and end == len(path) else path[start:end]))


def _append_special(out: list[Message], entry: Entry, mode: str) -> None:
    etype = entry.get("type")
    if etype == "custom_message":
        out.append(create_custom_message(entry))
    elif etype == "branch_summary":
        if mode != "context" or entry.get("summary"):
            out.append(_branch_summary_from_entry(entry))
    elif etype == "compaction" and mode == "branch":
        out.append(_compaction_summary_from_entry(entry))


def path_view(path: list[Entry]) -> _PathView | None:
    """Types and special positions of ``path``, to share between calls; None for odd shapes."""
    try:
        return _PathView(path)
    except (KeyError, TypeError):
        return None


def collect_messages(
    path: list[Entry],
    start: int = 0,
    end: int | None = None,
    mode: str = "compaction",
    *,
    view: _PathView | None = None,
) -> list[Message]:
    """Messages contributed by ``path[start:end]`` (see ``_PathView.collect`` for modes).

    ``view``: ``path_view(path)`` when the caller already has it (saves a pass).
    """
    end = len(path) if end is None else end
    out: list[Message] = []
    if start >= end:
        return out
    if view is None or view.path is not path:
        view = path_view(path)
    if view is not None:
        try:
            view.collect(out, start, end, mode)
            return out
        except (KeyError, TypeError):
            out = []
    for i in range(start, end):
        entry = path[i]
        if entry.get("type") == "message":
            message: Any = entry.get("message")  # (as pi: whatever the entry holds)
            out.append(message)
        else:
            _append_special(out, entry, mode)
    return out


def _recent_branch_point(entries: list[Entry]) -> bool:
    """True when a recent entry's parent is not the entry before it.

    A cheap look at the newest eighth of the list (C-speed column comparisons),
    so that a branched list whose leaf is its last entry (a new branch is usually
    the newest part) skips ``_chain_context``, whose whole pass would only find
    the break at the end.  False proves nothing: ``_chain_context`` checks fully.
    """
    n = len(entries)
    lo = max(n - 1 - max(n // 8, 64), 0)
    try:
        parents = list(map(_get_parent, entries[lo + 1 :]))
        ids = list(map(_get_id, entries[lo:-1]))
    except (KeyError, TypeError):
        return False
    return parents != ids


def _leaf_stop(entries: list[Entry], leaf_id: Any) -> int:
    """1 + the position of the last entry with id ``leaf_id`` (0 if none or odd shapes).

    Scans from the end in growing windows (leaves are usually recent entries).
    """
    hi = len(entries)
    width = 256
    try:
        while hi > 0:
            lo = max(hi - width, 0)
            window = list(map(_get_id, entries[lo:hi]))
            if leaf_id in window:
                window.reverse()
                return hi - window.index(leaf_id)
            hi = lo
            width *= 2
    except (KeyError, TypeError):
        return 0
    return 0


def _chain_context(entries: list[Entry], rest: Sequence[Entry] = ()) -> dict[str, Any] | None:
    """Context at the last entry when ``entries`` is itself the root-first path; else None.

    One pass that both verifies the chain (unique truthy ids, each parent is the
    previous entry, the first has no known parent) and collects the context, so each
    entry is touched once.  ``rest``: the entries after these in the session's list
    (other branches); none may share an id with the path or hold its first parent.
    Returns None (caller indexes and walks) when the list is not such a chain or
    holds unusual shapes.
    """
    seen: set[Any] = set()
    add = seen.add
    messages: list[Message] = []
    append = messages.append
    thinking_level: Any = "off"
    model_change: Entry | None = None
    model_change_pos = 0  # messages collected before the last model_change
    compaction: Entry | None = None
    compaction_idx = -1
    compaction_pos = 0
    edited = False  # a context_edit entry: pi 1.6.0's rules apply
    try:
        prev: Any = entries[0]["parentId"]  # checked against the ids below
        for entry in entries:
            if entry["parentId"] != prev and seen:
                return None
            prev = entry["id"]
            add(prev)
            etype = entry["type"]
            if etype == "message":
                # The message itself is not looked into here: touching 100,000
                # message dicts costs more than the rest of the pass.
                append(entry["message"])
            elif etype == "custom_message":
                append(create_custom_message(entry))
            elif etype == "branch_summary":
                _append_branch_summary(messages, entry)
            elif etype == "thinking_level_change":
                thinking_level = entry.get("thinkingLevel", UNSET)
            elif etype == "model_change":
                model_change = entry
                model_change_pos = len(messages)
            elif etype == "compaction":
                compaction = entry
                compaction_idx = len(seen) - 1  # its index, while the ids are unique
                compaction_pos = len(messages)
            elif etype == "context_edit":
                edited = True
    except (KeyError, TypeError, AttributeError):
        return None
    if not _chain_is_the_path(entries, seen, rest):
        return None
    if edited or _compaction_has_system_message(compaction):
        return context_from_path_reference(entries)

    model = _chain_model(messages, model_change_pos, model_change)
    if compaction is not None:
        kept = _kept_at_compaction(entries, compaction, compaction_idx)
        if kept is None:
            return context_from_path_reference(entries)  # pi 1.6.0 leaves these out
        messages = kept + messages[compaction_pos:]

    return _context_result(messages, thinking_level, model)


def _append_branch_summary(messages: list[Message], entry: Entry) -> None:
    if entry.get("summary"):
        messages.append(_branch_summary_from_entry(entry))


def _compaction_has_system_message(compaction: Entry | None) -> bool:
    return compaction is not None and bool(compaction.get("systemMessage"))


def _chain_is_the_path(entries: list[Entry], seen: set[Any], rest: Sequence[Entry]) -> bool:
    """_chain_context's checks once its pass is done: the ids are unique (so the walk
    from the last entry visits exactly this list) and none is falsy; the first entry's
    parent is none of them, and no other entry (`rest`) shares an id or is that parent."""
    if len(seen) != len(entries) or None in seen or "" in seen or 0 in seen:
        return False
    first_parent = entries[0].get("parentId")
    if first_parent and first_parent in seen:
        return False
    if rest:
        try:
            rest_ids = set(map(_get_id, rest))
        except (KeyError, TypeError):
            return False
        if not seen.isdisjoint(rest_ids) or (first_parent and first_parent in rest_ids):
            return False
    return True


def _chain_model(
    messages: list[Message], model_change_pos: int, model_change: Entry | None
) -> dict[str, Any] | None:
    """The model: the last assistant message after the last model_change, else that change."""
    for k in range(len(messages) - 1, model_change_pos - 1, -1):
        msg = messages[k]
        if type(msg) is dict and msg.get("role") == "assistant":
            return _model_dict(msg.get("provider", UNSET), msg.get("model", UNSET))
    if model_change is not None:
        return _model_dict(model_change.get("provider", UNSET), model_change.get("modelId", UNSET))
    return None


def _kept_at_compaction(
    entries: list[Entry], compaction: Entry, compaction_idx: int
) -> list[Message] | None:
    """The compaction's summary and the messages it kept (from its firstKeptEntryId up to
    it), or None when they hold a system message (pi 1.6.0 leaves those out)."""
    first_kept = compaction.get("firstKeptEntryId", UNSET)
    kept: list[Message] = [_compaction_summary_from_entry(compaction)]
    start = _position_before(entries, first_kept, compaction_idx)
    if start >= 0:
        for j in range(start, compaction_idx):
            _append_context_message(kept, entries[j])
    if any(type(m) is dict and m.get("role") == "system" for m in kept):
        return None
    return kept


def _context_result(messages: list[Message], thinking_level: Any, model: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"messages": messages}
    if thinking_level is not UNSET:
        result["thinkingLevel"] = thinking_level
    result["model"] = model
    return result


def _position_before(entries: list[Entry], entry_id: Any, stop: int) -> int:
    """Position of the entry with ``entry_id`` before ``stop`` (ids unique), or -1.

    Searched from ``stop`` backwards in growing windows: a compaction keeps the
    entries just before it, so the search reads a few ids, not the whole path.
    """
    hi = stop
    width = 256
    while hi > 0:
        lo = max(hi - width, 0)
        window = list(map(_get_id, entries[lo:hi]))
        if entry_id in window:
            return lo + window.index(entry_id)
        hi = lo
        width *= 2
    return -1


def _path_model(view: _PathView, last_model_change: int) -> dict[str, Any] | None:
    """The model at the end of the path: the last assistant message after the last
    model_change, else that change."""
    path = view.path
    specials = view.specials
    k = len(specials) - 1
    for i in range(len(path) - 1, last_model_change, -1):
        while k >= 0 and specials[k] > i:
            k -= 1
        if k >= 0 and specials[k] == i:
            continue  # not a message entry
        msg = view.message_at(i)
        if msg.get("role") == "assistant":
            return _model_dict(msg.get("provider", UNSET), msg.get("model", UNSET))
    if last_model_change >= 0:
        e = path[last_model_change]
        return _model_dict(e.get("provider", UNSET), e.get("modelId", UNSET))
    return None


def context_from_path(path: list[Entry], *, unique_ids: bool = False) -> dict[str, Any]:
    """Build the context from a root-first path (the tail of ``build_session_context``).

    Linear; the bulk of the work (runs of plain message entries) runs at C speed.

    ``unique_ids``: the caller knows no two entries of ``path`` share an id (a path
    from ``SessionTree.get_branch``, which proves it).  Then a
    compaction's first kept entry is searched backwards from the compaction (it is
    usually just before it) instead of from the root: pi takes the first entry with
    that id, which is the only one when the ids are unique.
    """
    try:
        view = _PathView(path)
        return _context_fast(view, unique_ids)
    except (KeyError, TypeError, AttributeError):
        return context_from_path_reference(path)


def _context_of_view(view: _PathView, unique_ids: bool) -> dict[str, Any]:
    """``_context_fast``, or the reference for the shapes it does not take."""
    try:
        return _context_fast(view, unique_ids)
    except (KeyError, TypeError, AttributeError):
        return context_from_path_reference(view.path)


def _context_fast(view: _PathView, unique_ids: bool = False) -> dict[str, Any]:
    path = view.path
    thinking_level: Any = "off"
    last_model_change = -1
    compaction_idx = -1
    for i in view.specials:
        t = path[i]["type"]
        if t == "thinking_level_change":
            thinking_level = path[i].get("thinkingLevel", UNSET)
        elif t == "model_change":
            last_model_change = i
        elif t == "compaction":
            compaction_idx = i
        elif t == "context_edit":
            return context_from_path_reference(path)
    if compaction_idx >= 0 and path[compaction_idx].get("systemMessage"):
        return context_from_path_reference(path)

    model = _path_model(view, last_model_change)

    messages: list[Message] = []
    if compaction_idx >= 0:
        compaction = path[compaction_idx]
        messages.append(_compaction_summary_from_entry(compaction))
        first_kept = compaction.get("firstKeptEntryId", UNSET)
        if unique_ids:
            start = _position_before(path, first_kept, compaction_idx)
            if start < 0:
                start = compaction_idx
        else:
            try:
                start = list(map(_get_id, path[:compaction_idx])).index(first_kept)
            except ValueError:
                start = compaction_idx
        view.collect(messages, start, compaction_idx, "context")
        for kept in messages[1:]:
            if kept.get("role") == "system":  # pi 1.6.0 drops these: slow path
                return context_from_path_reference(path)
        view.collect(messages, compaction_idx + 1, len(path), "context")
    else:
        view.collect(messages, 0, len(path), "context")

    return _context_result(messages, thinking_level, model)


def context_entries(path: list[Entry]) -> list[Entry]:
    """The entries whose messages make the context at the end of ``path`` (pi 1.6.0).

    Without a compaction: the whole path.  With one: the latest compaction first,
    then the entries from its ``firstKeptEntryId`` up to it (system messages left
    out: the compaction carries its own), then everything after it.
    """
    compaction_idx = -1
    for i, entry in enumerate(path):
        if entry.get("type") == "compaction":
            compaction_idx = i
    if compaction_idx < 0:
        return list(path)
    compaction = path[compaction_idx]
    first_kept = compaction.get("firstKeptEntryId", UNSET)
    out = [compaction]
    found = False
    for i in range(compaction_idx):
        entry = path[i]
        if not found and entry.get("id", UNSET) == first_kept:
            found = True
        if found and not _is_system_message(entry):
            out.append(entry)
    out.extend(path[compaction_idx + 1 :])
    return out


def _is_system_message(entry: Entry) -> bool:
    if entry.get("type") != "message":
        return False
    message = entry.get("message")
    return isinstance(message, dict) and message.get("role") == "system"


def context_edits(entries: list[Entry]) -> dict[Any, Entry]:
    """``targetId -> context_edit entry`` in effect among ``entries``: the latest one wins.

    Pass :func:`context_entries` of a path to get the edits pi 1.6.0 applies
    there; an edit whose target is not among them changes nothing.  The
    inspector uses this to show which entries an edit replaced
    (``replacement`` is an object) or dropped (``replacement`` is null).
    """
    edits: dict[Any, Entry] = {}
    for entry in entries:
        if entry.get("type") == "context_edit":
            edits[entry.get("targetId", UNSET)] = entry
    return edits


_EDITABLE_ROLES = frozenset(("user", "assistant", "toolResult", "custom"))


def _entry_context_messages(entry: Entry, first: bool) -> list[Message]:
    """What one context entry contributes before edits (pi 1.6.0).

    ``first``: the entry opens the context (only then does a compaction speak).
    """
    etype = entry.get("type")
    if etype == "message":
        message: Any = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "system":
            if message.get("content") is None:
                return [{**message, "content": ""}]
        return [message]  # (as pi: whatever the entry holds)
    if etype == "custom_message":
        return [create_custom_message(entry)]
    if etype == "branch_summary":
        return [_branch_summary_from_entry(entry)] if entry.get("summary") else []
    if etype == "compaction" and first:
        summary = _compaction_summary_from_entry(entry)
        system = entry.get("systemMessage")
        return [system, summary] if system else [summary]
    return []  # settings, labels, usage, context_edit, unknown future types


def _apply_edit(messages: list[Message], edit: Entry) -> list[Message]:
    replacement = edit.get("replacement")
    if replacement is None:
        return []
    if not isinstance(replacement, dict):
        replacement = {}
    out = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role not in _EDITABLE_ROLES:
            out.append(message)
            continue
        edited = dict(message)
        if "content" not in replacement:
            edited.pop("content", None)  # JS: content: undefined
        else:
            content = replacement["content"]
            if role in ("assistant", "toolResult") and isinstance(content, str):
                content = [{"type": "text", "text": content}]
            edited["content"] = content
        out.append(edited)
    return out


def context_from_path_reference(path: list[Entry]) -> dict[str, Any]:
    """Straightforward version of ``context_from_path`` (fallback and test oracle).

    Follows pi 1.6.0: compaction-aware context entries, then each entry's
    messages with the latest ``context_edit`` of that entry applied.
    """
    thinking_level: Any = "off"
    model = None
    for entry in path:
        etype = entry.get("type")
        if etype == "message":
            msg = entry.get("message") or {}
            if msg.get("role") == "assistant":
                model = _model_dict(msg.get("provider", UNSET), msg.get("model", UNSET))
        elif etype == "thinking_level_change":
            thinking_level = entry.get("thinkingLevel", UNSET)
        elif etype == "model_change":
            model = _model_dict(entry.get("provider", UNSET), entry.get("modelId", UNSET))

    entries = context_entries(path)
    edits = context_edits(entries)
    messages: list[Message] = []
    for index, entry in enumerate(entries):
        contributed = _entry_context_messages(entry, index == 0)
        edit = edits.get(entry.get("id", UNSET)) if edits else None
        if edit is not None:
            contributed = _apply_edit(contributed, edit)
        messages.extend(contributed)

    return _context_result(messages, thinking_level, model)


def _model_dict(provider: Any, model_id: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if provider is not UNSET:
        out["provider"] = provider
    if model_id is not UNSET:
        out["modelId"] = model_id
    return out


# ---------------------------------------------------------------------------
# convert_to_llm
# ---------------------------------------------------------------------------


def bash_execution_to_text(msg: Message) -> str:
    """The user-message text a bashExecution becomes."""
    text = f"Ran `{_js_str(msg.get('command', UNSET))}`\n"
    output = msg.get("output")
    if output:
        text += f"```\n{_js_str(output)}\n```"
    else:
        text += "(no output)"
    exit_code = msg.get("exitCode")
    if msg.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0 and exit_code is not False:
        text += f"\n\nCommand exited with code {_js_str(exit_code)}"
    if msg.get("truncated") and msg.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {_js_str(msg.get('fullOutputPath'))}]"
    return text


def _js_str(value: Any) -> str:
    """Template-literal string conversion for the simple values we meet."""
    if isinstance(value, str):
        return value
    if value is UNSET:
        return "undefined"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _with_timestamp(msg: Message, out: Message) -> Message:
    if "timestamp" in msg:
        out["timestamp"] = msg["timestamp"]
    return out


def convert_message_to_llm(m: Message) -> Message | None:
    role = m.get("role")
    if role in ("user", "assistant", "toolResult", "system"):
        return m  # pi 1.6.0 passes system messages through
    if role == "bashExecution":
        if m.get("excludeFromContext"):
            return None
        return _with_timestamp(
            m, {"role": "user", "content": [{"type": "text", "text": bash_execution_to_text(m)}]}
        )
    if role == "custom":
        content = m.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out: Message = {"role": "user"}
        if "content" in m:
            out["content"] = content
        return _with_timestamp(m, out)
    if role == "branchSummary":
        text = BRANCH_SUMMARY_PREFIX + _js_str(m.get("summary", UNSET)) + BRANCH_SUMMARY_SUFFIX
        return _with_timestamp(m, {"role": "user", "content": [{"type": "text", "text": text}]})
    if role == "compactionSummary":
        text = (
            COMPACTION_SUMMARY_PREFIX + _js_str(m.get("summary", UNSET)) + COMPACTION_SUMMARY_SUFFIX
        )
        return _with_timestamp(m, {"role": "user", "content": [{"type": "text", "text": text}]})
    return None


def convert_to_llm(messages: list[Message]) -> list[Message]:
    """Agent messages -> what the LLM receives (pi's ``convertToLlm``)."""
    out = []
    for m in messages:
        converted = convert_message_to_llm(m)
        if converted is not None:
            out.append(converted)
    return out
