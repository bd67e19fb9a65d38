"""pi session files (JSONL): parse, migrate (v1 -> v2 -> v3), serialize.

Public API
----------
- ``iter_session_lines(lines)`` -> iterator of ``SessionLine`` (streaming; one per
  non-blank line: a JSON object, or an error with 1-based line number and reason)
- ``read_session(lines, *, migrate=True)`` -> ``SessionImport`` (header, entries,
  malformed lines, migration flag, tree problems)
- ``parse_session_entries(content)`` -> list (pi's ``parseSessionEntries``: skips
  malformed lines silently; use ``iter_session_lines`` to see them)
- ``migrate_session_entries(file_entries, id_generator=None) -> bool``
- ``serialize_entry(obj) -> str`` (``JSON.stringify``: one line, no spaces)
- ``export_session_jsonl(header, entries) -> str`` / ``iter_export_lines``
- ``CURRENT_SESSION_VERSION`` (3)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .jsutil import js_json_dumps
from .tree import TreeProblem, generate_entry_id, validate_entries

__all__ = [
    "CURRENT_SESSION_VERSION",
    "SessionImport",
    "SessionLine",
    "export_session_jsonl",
    "iter_export_lines",
    "iter_session_lines",
    "migrate_session_entries",
    "parse_session_line",
    "parse_session_entries",
    "read_session",
    "serialize_entry",
]

CURRENT_SESSION_VERSION = 3

# Characters JavaScript's String.prototype.trim() removes.
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON literal {name}")


_decoder = json.JSONDecoder(parse_constant=_reject_constant)


def _js_json_parse(text: str) -> Any:
    """``JSON.parse``: JSON whitespace around one value; no NaN / Infinity."""
    return _decoder.decode(text)


def parse_session_entries(content: str) -> list[Any]:
    """pi's ``parseSessionEntries``: every line that parses as JSON, malformed ones skipped."""
    out = []
    for line in content.strip(_JS_WHITESPACE).split("\n"):
        if not line.strip(_JS_WHITESPACE):
            continue
        try:
            out.append(_js_json_parse(line))
        except ValueError:
            continue
    return out


# ---------------------------------------------------------------------------
# Streaming parse with error reporting
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionLine:
    """One non-blank line: ``value`` (a JSON object) or ``error`` (why it was skipped)."""

    line_number: int  # 1-based physical line number
    value: dict[str, Any] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _describe_json_error(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} at column {exc.colno}"
    return f"invalid JSON: {exc}"


def _split_chunks(chunks: Iterable[str | bytes]) -> Iterator[str]:
    """Physical lines (without ``\\n``) from chunks cut anywhere; only ``\\n`` ends a line."""
    pending_text = ""
    pending_bytes = b""
    for chunk in chunks:
        if isinstance(chunk, (bytes, bytearray, memoryview)):
            *complete_raw, pending_bytes = (pending_bytes + bytes(chunk)).split(b"\n")
            for raw in complete_raw:
                yield raw.decode("utf-8", errors="replace")
        else:
            *complete, pending_text = (pending_text + chunk).split("\n")
            yield from complete
    if pending_bytes:
        yield pending_bytes.decode("utf-8", errors="replace")
    if pending_text:
        yield pending_text


def iter_session_lines(lines: Iterable[str | bytes]) -> Iterator[SessionLine]:
    """Parse JSONL one line at a time (file objects, lists of lines, or arbitrary chunks).

    Only ``\\n`` ends a line (a ``\\r`` before it is JSON whitespace).  Blank lines
    are ignored; every other line yields a ``SessionLine``: a JSON object, or an
    error with its reason (invalid JSON, not an object).  Bytes are decoded as UTF-8
    with invalid sequences replaced (as Node's ``readFileSync`` does).  A byte-order
    mark at the start of the first line is ignored.
    """
    number = 0
    for line in _split_chunks(lines):
        number += 1
        if number == 1 and line.startswith("\ufeff"):
            line = line[1:]
        value, error = parse_session_line(line)
        if error is not None:
            yield SessionLine(number, error=error)
        elif value is not None:
            yield SessionLine(number, value=value)


def parse_session_line(line: str) -> tuple[dict[str, Any] | None, str | None]:
    """One line of a session file: (object, None), (None, why it is skipped), or
    (None, None) for a blank line."""
    try:
        value = _js_json_parse(line)
    except RecursionError:
        return None, "invalid JSON: nested too deeply to read"
    except ValueError as exc:
        if not line.strip(_JS_WHITESPACE):
            return None, None
        return None, _describe_json_error(exc)
    if not isinstance(value, dict):
        return None, f"not a JSON object (got {_js_type(value)})"
    return value, None


def _js_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array"


@dataclass
class SessionImport:
    header: dict[str, Any] | None
    entries: list[dict[str, Any]]
    errors: list[SessionLine] = field(default_factory=list)  # malformed lines
    migrated: bool = False
    original_version: int | None = None
    problems: list[TreeProblem] = field(default_factory=list)  # structural issues (v3 entries)

    @property
    def ok(self) -> bool:
        return self.header is not None and not self.problems


def read_session(
    lines: Iterable[str | bytes],
    *,
    migrate: bool = True,
    id_generator: Callable[[set[str]], str] | None = None,
) -> SessionImport:
    """Read a pi session file: header, entries, malformed lines, tree problems.

    The header is the first object with ``type == "session"`` (pi requires it on the
    first line; a missing or misplaced header is reported as a problem-free import
    with ``header=None`` so the caller can refuse it).  Entries are migrated to v3
    in place when ``migrate``.
    """
    items: list[dict[str, Any]] = []
    numbers: list[int] = []
    errors: list[SessionLine] = []
    for sl in iter_session_lines(lines):
        if sl.ok:
            items.append(sl.value)  # type: ignore[arg-type]  # ok: value is the parsed object
            numbers.append(sl.line_number)
        else:
            errors.append(sl)
    first = items[0] if items else None
    header = (
        first
        if first is not None and first.get("type") == "session" and isinstance(first.get("id"), str)
        else None
    )
    original_version = None
    if header is not None:
        v = header.get("version")
        original_version = v if isinstance(v, int) and not isinstance(v, bool) else 1
    migrated = migrate_session_entries(items, id_generator) if migrate else False
    entries = []
    for number, item in zip(numbers, items, strict=True):
        if item.get("type") != "session":
            entries.append(item)
        elif item is not header:
            errors.append(
                SessionLine(number, error="session header that is not the first line (ignored)")
            )
    errors.sort(key=lambda sl: sl.line_number)
    problems = validate_entries(entries)
    return SessionImport(
        header=header,
        entries=entries,
        errors=errors,
        migrated=migrated,
        original_version=original_version,
        problems=problems,
    )


# ---------------------------------------------------------------------------
# Migration
# ---------------------------------------------------------------------------


def _is_js_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _migrate_v1_to_v2(entries: list[Any], gen: Callable[[set[str]], str]) -> None:
    taken: set[str] = set()
    prev_id = None
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "session":
            entry["version"] = 2
            continue
        new_id = gen(taken)
        taken.add(new_id)
        entry["id"] = new_id
        entry["parentId"] = prev_id
        prev_id = new_id
        if entry.get("type") == "compaction" and _is_js_number(entry.get("firstKeptEntryIndex")):
            index = entry["firstKeptEntryIndex"]
            target = None
            if float(index).is_integer() and 0 <= index < len(entries):
                target = entries[int(index)]
            if isinstance(target, dict) and target.get("type") != "session":
                if "id" in target:
                    entry["firstKeptEntryId"] = target["id"]
                else:
                    entry.pop("firstKeptEntryId", None)  # JS: set to undefined
            del entry["firstKeptEntryIndex"]


def _migrate_v2_to_v3(entries: list[Any]) -> None:
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "session":
            entry["version"] = 3
            continue
        if entry.get("type") == "message":
            msg = entry.get("message")
            if isinstance(msg, dict) and msg.get("role") == "hookMessage":
                msg["role"] = "custom"


def migrate_session_entries(
    file_entries: list[Any],
    id_generator: Callable[[set[str]], str] | None = None,
) -> bool:
    """Bring header + entries to v3 in place; True if anything was migrated.

    Version comes from the first ``session`` item (missing header or version = 1).
    v1 -> v2 gives every entry an id (``id_generator(taken)``, default 8 random hex)
    chained by ``parentId`` in file order and turns a compaction's
    ``firstKeptEntryIndex`` into ``firstKeptEntryId``; v2 -> v3 renames message role
    ``hookMessage`` to ``custom``.
    """
    header = next(
        (e for e in file_entries if isinstance(e, dict) and e.get("type") == "session"), None
    )
    version = header.get("version") if header is not None else None
    if version is None:
        version = 1
    if _is_js_number(version) and version >= CURRENT_SESSION_VERSION:
        return False
    gen = id_generator or generate_entry_id
    if not _is_js_number(version) or version < 2:
        _migrate_v1_to_v2(file_entries, gen)
    _migrate_v2_to_v3(file_entries)
    return True


# ---------------------------------------------------------------------------
# Serialization
# ---------------------------------------------------------------------------


def serialize_entry(obj: dict[str, Any]) -> str:
    """One JSONL line exactly as pi writes it (``JSON.stringify``), without the newline."""
    return js_json_dumps(obj)


def iter_export_lines(header: dict[str, Any], entries: Iterable[dict[str, Any]]) -> Iterator[str]:
    """Lines (each ending in ``\\n``) of a session file: header first, then entries."""
    yield serialize_entry(header) + "\n"
    for entry in entries:
        yield serialize_entry(entry) + "\n"


def export_session_jsonl(header: dict[str, Any], entries: Iterable[dict[str, Any]]) -> str:
    """Whole session file text, as pi writes it."""
    return "".join(iter_export_lines(header, entries))
