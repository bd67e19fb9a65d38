"""Compaction planning: cut points, what to summarize, file operations (pi 0.80.2 semantics).

Public API
----------
- ``CompactionSettings(enabled=True, reserve_tokens=16384, keep_recent_tokens=20000)``
  with ``from_dict`` / ``to_dict`` (pi's camelCase keys)
- ``find_valid_cut_points(entries, start_index, end_index) -> list[int]``
- ``find_turn_start_index(entries, entry_index, start_index) -> int``
- ``find_cut_point(entries, start_index, end_index, keep_recent_tokens)``
  -> ``{firstKeptEntryIndex, turnStartIndex, isSplitTurn}``
- ``prepare_compaction(path_entries, settings) -> CompactionPreparation | None``
- ``FileOps`` (insertion-ordered read / written / edited sets),
  ``extract_file_ops_from_message``, ``compute_file_lists``, ``format_file_operations``
- ``get_last_assistant_usage(entries)``

The estimator is pi's chars/4 (``tokens.estimate_tokens``); pass ``estimator=`` to
``find_cut_point`` / ``prepare_compaction`` to use another (e.g. tiktoken).  Pass
``estimates=`` (one ``tokens.entry_token_estimate`` per entry, as the database stores
them; None where unknown) and the cut-point walk only sums integers, with the same result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, cast

from .jsutil import js_sorted
from .messages import build_session_context, collect_messages, path_view
from .tokens import (
    entry_token_estimate,
    estimate_context_tokens,
    estimate_tokens,
    get_assistant_usage,
)
from .tree import UNSET

__all__ = [
    "CompactionPreparation",
    "CompactionSettings",
    "FileOps",
    "compute_file_lists",
    "extract_file_ops_from_message",
    "find_cut_point",
    "find_turn_start_index",
    "find_valid_cut_points",
    "format_file_operations",
    "get_last_assistant_usage",
    "prepare_compaction",
]

Entry = dict[str, Any]
Message = dict[str, Any]

# ---------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CompactionSettings:
    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> CompactionSettings:
        data = data or {}
        default = cls()
        return cls(
            enabled=bool(data.get("enabled", default.enabled)),
            reserve_tokens=int(data.get("reserveTokens", default.reserve_tokens)),
            keep_recent_tokens=int(data.get("keepRecentTokens", default.keep_recent_tokens)),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "reserveTokens": self.reserve_tokens,
            "keepRecentTokens": self.keep_recent_tokens,
        }


def _as_settings(settings: Any) -> CompactionSettings:
    if isinstance(settings, CompactionSettings):
        return settings
    if settings is None or isinstance(settings, dict):
        return CompactionSettings.from_dict(settings)
    raise TypeError(f"unsupported compaction settings: {settings!r}")


# ---------------------------------------------------------------------------
# File operations
# ---------------------------------------------------------------------------


@dataclass
class FileOps:
    """Paths touched by tool calls; dicts used as insertion-ordered sets."""

    read: dict[str, None] = field(default_factory=dict)
    written: dict[str, None] = field(default_factory=dict)
    edited: dict[str, None] = field(default_factory=dict)

    def add_read(self, paths: Iterable[str]) -> None:
        for p in paths:
            self.read[p] = None

    def add_edited(self, paths: Iterable[str]) -> None:
        for p in paths:
            self.edited[p] = None

    def add_details(self, details: Any) -> None:
        """Accumulate ``{readFiles, modifiedFiles}`` of an earlier summary."""
        if not isinstance(details, dict):
            return
        if isinstance(details.get("readFiles"), list):
            self.add_read(details["readFiles"])
        if isinstance(details.get("modifiedFiles"), list):
            self.add_edited(details["modifiedFiles"])

    def sorted_dict(self) -> dict[str, list[str]]:
        return {
            "read": js_sorted(self.read),
            "written": js_sorted(self.written),
            "edited": js_sorted(self.edited),
        }


_FILE_TOOLS: dict[str | None, str] = {"read": "read", "write": "written", "edit": "edited"}


def extract_file_ops_from_message(message: Message, file_ops: FileOps) -> None:
    """Record ``path`` arguments of read / write / edit tool calls in an assistant message."""
    if message.get("role") != "assistant":
        return
    content = message.get("content")
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "toolCall":
            continue
        if "arguments" not in block or "name" not in block:
            continue
        args = block.get("arguments")
        if not isinstance(args, dict):
            continue
        path = args.get("path")
        if not isinstance(path, str) or not path:
            continue
        bucket = _FILE_TOOLS.get(block.get("name"))
        if bucket is not None:
            getattr(file_ops, bucket)[path] = None


def _add_file_ops(messages: list[Message], file_ops: FileOps) -> None:
    """``extract_file_ops_from_message`` over many messages, with the lookups hoisted."""
    buckets = {"read": file_ops.read, "write": file_ops.written, "edit": file_ops.edited}
    for message in messages:
        if message.get("role") != "assistant":
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "toolCall":
                continue
            if "arguments" not in block or "name" not in block:
                continue
            args = block["arguments"]
            if not isinstance(args, dict):
                continue
            path = args.get("path")
            if not isinstance(path, str) or not path:
                continue
            bucket = buckets.get(block["name"])
            if bucket is not None:
                bucket[path] = None


def _position_of_id(entries: list[Entry], entry_id: Any, default: int) -> int:
    """Index of the first entry whose ``id`` equals ``entry_id`` (``default`` if none)."""
    if entry_id is not UNSET and entry_id is not None:
        try:
            # dict.get gives None for a missing id, which cannot equal entry_id here.
            return list(map(dict.get, entries, repeat("id"))).index(entry_id)
        except ValueError:
            return default
        except TypeError:  # not all dicts
            pass
    for i, e in enumerate(entries):
        if e.get("id", UNSET) == entry_id:
            return i
    return default


def compute_file_lists(file_ops: FileOps) -> dict[str, list[str]]:
    """``{readFiles: read-but-not-modified, modifiedFiles: edited or written}``, JS-sorted."""
    modified = dict(file_ops.edited)
    modified.update(file_ops.written)
    read_only = [p for p in file_ops.read if p not in modified]
    return {"readFiles": js_sorted(read_only), "modifiedFiles": js_sorted(modified)}


def format_file_operations(read_files: list[str], modified_files: list[str]) -> str:
    """The ``<read-files>`` / ``<modified-files>`` blocks appended to a summary ("" if none)."""
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    if not sections:
        return ""
    return "\n\n" + "\n\n".join(sections)


# ---------------------------------------------------------------------------
# Cut points
# ---------------------------------------------------------------------------

_CUT_ROLES = frozenset(
    ("user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary")
)
_TURN_START_ROLES = frozenset(("user", "bashExecution"))
_INFINITY = float("inf")


def _is_cut_point(entry: Entry) -> bool:
    etype = entry.get("type")
    if etype == "message":
        return (entry.get("message") or {}).get("role") in _CUT_ROLES
    return etype == "branch_summary" or etype == "custom_message"


def find_valid_cut_points(entries: list[Entry], start_index: int, end_index: int) -> list[int]:
    """Indices in [start, end) where the kept part may begin (never a toolResult)."""
    return [
        i
        for i in range(max(start_index, 0), min(end_index, len(entries)))
        if _is_cut_point(entries[i])
    ]


def _next_cut_point(entries: list[Entry], start: int, end: int) -> int:
    for i in range(start, end):
        if _is_cut_point(entries[i]):
            return i
    return -1


def find_turn_start_index(entries: list[Entry], entry_index: int, start_index: int) -> int:
    """Nearest index <= entry_index (and >= start_index) that starts a turn, or -1.

    A turn starts at a user or bashExecution message, a branch_summary or a
    custom_message entry.
    """
    for i in range(min(entry_index, len(entries) - 1), max(start_index, 0) - 1, -1):
        entry = entries[i]
        etype = entry.get("type")
        if etype == "branch_summary" or etype == "custom_message":
            return i
        if etype == "message" and (entry.get("message") or {}).get("role") in _TURN_START_ROLES:
            return i
    return -1


_FIRST_BLOCK = 64
_MAX_BLOCK = 16384


def _budget_index(
    entries: list[Entry],
    estimates: Sequence[int | None],
    start: int,
    end: int,
    keep_recent_tokens: float,
) -> int:
    """The message entry where the walk back from ``end - 1`` reaches the budget, or -1.

    Whole blocks of ``estimates`` are summed by ``sum`` (non-message entries count 0,
    as ``entry_token_estimate`` gives them); only the block holding the answer is
    walked entry by entry, checking the budget at message entries as pi does.
    """
    accumulated = 0
    hi = end
    width = _FIRST_BLOCK
    while hi > start:
        lo = max(hi - width, start)
        width = min(width * 2, _MAX_BLOCK)
        stored = estimates[lo:hi]
        try:
            total = sum(stored)  # type: ignore[arg-type]  # a None raises TypeError: see below
            block = cast("Sequence[int]", stored)
        except TypeError:  # a None: not stored yet, estimated here
            block = [
                entry_token_estimate(entries[lo + k]) if value is None else value
                for k, value in enumerate(stored)
            ]
            total = sum(block)
        if accumulated + total < keep_recent_tokens:
            accumulated += total
            hi = lo
            continue
        for k in range(hi - lo - 1, -1, -1):
            if entries[lo + k].get("type") == "message":
                accumulated += block[k]
                if accumulated >= keep_recent_tokens:
                    return lo + k
        hi = lo  # only reachable with a budget <= 0 and no message here, or NaN
    return -1


def find_cut_point(
    entries: list[Entry],
    start_index: int,
    end_index: int,
    keep_recent_tokens: float,
    *,
    estimator: Callable[[Message], int] = estimate_tokens,
    estimates: Sequence[int | None] | None = None,
) -> dict[str, Any]:
    """Where to cut so that about ``keep_recent_tokens`` of recent messages stay.

    Walks back from ``end_index - 1`` summing message estimates; once the sum
    reaches the budget, cuts at the first valid cut point at or after that entry
    (default: the first cut point), then moves back over non-message entries up to
    the previous message or compaction.  Linear time.

    ``estimates``: precomputed ``entry_token_estimate`` of each entry (same length
    as ``entries``; None where unknown, computed here).  The walk then sums them in
    C-speed blocks and looks at single entries only in the block where the budget is
    reached.  Same result as without them.
    """
    end = min(end_index, len(entries))
    start = max(start_index, 0)
    first_cut = _next_cut_point(entries, start, end)
    if first_cut < 0:
        return {"firstKeptEntryIndex": start_index, "turnStartIndex": -1, "isSplitTurn": False}

    # Only the first cut point and the first one at/after the budget entry matter,
    # so both are found by short forward scans instead of listing every cut point.
    cut_index = first_cut
    # pi's chars/4 estimates are finite integers: their sum never reaches an infinite
    # (or NaN) budget, so the walk below would end where it started, at the first cut.
    if estimates is not None and len(estimates) != len(entries):
        raise ValueError("estimates must hold one value per entry")
    if estimates is not None and start_index >= 0:
        if keep_recent_tokens < _INFINITY:  # integer estimates never reach inf (or NaN)
            budget_index = _budget_index(entries, estimates, start, end, keep_recent_tokens)
            if budget_index >= 0:
                found = _next_cut_point(entries, budget_index, end)
                if found >= 0:
                    cut_index = found
    elif estimator is not estimate_tokens or keep_recent_tokens < _INFINITY:
        accumulated = 0
        for i in range(end - 1, start_index - 1, -1):
            entry = entries[i]
            if entry.get("type") == "message":
                accumulated += estimator(entry.get("message") or {})
                if accumulated >= keep_recent_tokens:
                    found = _next_cut_point(entries, max(i, start), end)
                    if found >= 0:
                        cut_index = found
                    break

    while cut_index > start_index:
        prev_type = entries[cut_index - 1].get("type")
        if prev_type == "compaction" or prev_type == "message":
            break
        cut_index -= 1

    cut_entry = entries[cut_index]
    is_user = (
        cut_entry.get("type") == "message"
        and (cut_entry.get("message") or {}).get("role") == "user"
    )
    turn_start = -1 if is_user else find_turn_start_index(entries, cut_index, start_index)
    return {
        "firstKeptEntryIndex": cut_index,
        "turnStartIndex": turn_start,
        "isSplitTurn": (not is_user) and turn_start != -1,
    }


# ---------------------------------------------------------------------------
# prepare_compaction
# ---------------------------------------------------------------------------


def get_last_assistant_usage(entries: list[Entry]) -> dict[str, Any] | None:
    """Usage of the newest successful assistant message among the entries."""
    for i in range(len(entries) - 1, -1, -1):
        entry = entries[i]
        if entry.get("type") == "message":
            usage = get_assistant_usage(entry.get("message") or {})
            if usage:
                return usage
    return None


@dataclass
class CompactionPreparation:
    first_kept_entry_id: str
    messages_to_summarize: list[Message]
    turn_prefix_messages: list[Message]
    is_split_turn: bool
    tokens_before: int
    previous_summary: str | None
    file_ops: FileOps
    settings: CompactionSettings
    first_kept_entry_index: int = -1
    previous_compaction_index: int = -1

    def file_lists(self) -> dict[str, list[str]]:
        return compute_file_lists(self.file_ops)

    def details(self) -> dict[str, list[str]]:
        """``{readFiles, modifiedFiles}`` to store in the compaction entry."""
        return self.file_lists()

    def to_dict(self) -> dict[str, Any]:
        """pi's CompactionPreparation shape (camelCase; fileOps as JS-sorted lists)."""
        out: dict[str, Any] = {
            "firstKeptEntryId": self.first_kept_entry_id,
            "messagesToSummarize": self.messages_to_summarize,
            "turnPrefixMessages": self.turn_prefix_messages,
            "isSplitTurn": self.is_split_turn,
            "tokensBefore": self.tokens_before,
        }
        if self.previous_summary is not None:
            out["previousSummary"] = self.previous_summary
        out["fileOps"] = self.file_ops.sorted_dict()
        out["settings"] = self.settings.to_dict()
        return out


def prepare_compaction(
    path_entries: list[Entry],
    settings: Any = None,
    *,
    estimator: Callable[[Message], int] = estimate_tokens,
    estimates: Sequence[int | None] | None = None,
) -> CompactionPreparation | None:
    """Plan a compaction of a root-first path (pi 0.80.2 semantics).

    Returns None when the path is empty, already ends with a compaction, the
    first kept entry has no id, or nothing would be summarized.  With an earlier compaction on the path the range
    starts at *its* first kept entry (so what was kept last time is summarized now,
    with the earlier summary passed as ``previous_summary``).  ``tokens_before`` is
    estimated from the context built at the end of the path.  ``estimates``: the
    entries' stored ``entry_token_estimate`` figures, for the cut-point search (see
    ``find_cut_point``).
    """
    cfg = _as_settings(settings)
    if not path_entries or path_entries[-1].get("type") == "compaction":
        return None

    # One types column for the whole path, shared by the steps below.
    view = path_view(path_entries)
    prev_idx = -1
    if view is not None:
        for i in reversed(view.specials):  # the non-"message" positions
            if path_entries[i].get("type") == "compaction":
                prev_idx = i
                break
    else:
        for i in range(len(path_entries) - 1, -1, -1):
            if path_entries[i].get("type") == "compaction":
                prev_idx = i
                break

    previous_summary = None
    boundary_start = 0
    if prev_idx >= 0:
        prev = path_entries[prev_idx]
        summary = prev.get("summary")
        previous_summary = summary if summary is not None else None
        kept_id = prev.get("firstKeptEntryId", UNSET)
        boundary_start = _position_of_id(path_entries, kept_id, prev_idx + 1)
    boundary_end = len(path_entries)

    # pi builds the context with the last entry as leaf over the whole list.
    context = build_session_context(path_entries)
    tokens_before = estimate_context_tokens(context["messages"])["tokens"]

    cut = find_cut_point(
        path_entries,
        boundary_start,
        boundary_end,
        cfg.keep_recent_tokens,
        estimator=estimator,
        estimates=estimates,
    )
    first_kept = (
        path_entries[cut["firstKeptEntryIndex"]]
        if cut["firstKeptEntryIndex"] < boundary_end
        else None
    )
    if first_kept is None or not first_kept.get("id"):
        return None

    history_end = cut["turnStartIndex"] if cut["isSplitTurn"] else cut["firstKeptEntryIndex"]
    to_summarize = collect_messages(
        path_entries, boundary_start, history_end, "compaction", view=view
    )
    turn_prefix = (
        collect_messages(
            path_entries,
            cut["turnStartIndex"],
            cut["firstKeptEntryIndex"],
            "compaction",
            view=view,
        )
        if cut["isSplitTurn"]
        else []
    )
    if not to_summarize and not turn_prefix:
        return None  # pi 0.80.2: nothing to summarize, no compaction

    file_ops = FileOps()
    if prev_idx >= 0:
        prev = path_entries[prev_idx]
        if not prev.get("fromHook") and prev.get("details"):
            file_ops.add_details(prev.get("details"))
    _add_file_ops(to_summarize, file_ops)
    _add_file_ops(turn_prefix, file_ops)

    return CompactionPreparation(
        first_kept_entry_id=first_kept["id"],
        messages_to_summarize=to_summarize,
        turn_prefix_messages=turn_prefix,
        is_split_turn=cut["isSplitTurn"],
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        file_ops=file_ops,
        settings=cfg,
        first_kept_entry_index=cut["firstKeptEntryIndex"],
        previous_compaction_index=prev_idx,
    )
