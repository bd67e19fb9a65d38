"""The per-line half of importing a pi session file: bytes in, records out, no database.

`LinePreparer` takes the bytes of a session file in chunks of any size and returns, in
file order, one record per line that matters:
- `Skip(number, reason)`: a line pi would skip (malformed JSON, not an object, an entry
  without a usable id, a line over the size limit);
- `Skip(number, reason)` also for a line nested deeper than `input_limits.MAX_JSON_DEPTH`;
- `Warn(number, message)`: a line that was read with a repair (bytes that are not UTF-8),
  or one with a short field (a cwd, a name, a label, an id) longer than pages show
  (`input_limits.FIELD_LIMITS`): the stored line keeps it whole, pages show it cut;
- `RawObject(number, value, text)`: the first object (the header, checked by the
  importer), and every object of a v1/v2 file (migrated as a whole by the importer);
- `PreparedEntry`: an entry of a v3 file, with everything the database row needs.

How the bytes are cut into chunks does not change the records (a line can span any
number of chunks), and a line over the size limit is counted, never held in memory.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import msgspec

from .input_limits import (
    MAX_CWD_CHARS,
    MAX_JSON_DEPTH,
    SHORTEST_FIELD_LIMIT,
    line_may_nest_deeper,
    nesting_exceeds,
    oversized_fields,
)
from .jsonl import parse_session_line, serialize_entry
from .preview import entry_row_columns
from .text import clean_text
from .usage import EntryUsage, usage_with_day

# A single line larger than this is skipped (reported) without being held in memory.
MAX_LINE_BYTES = 256 * 1024 * 1024

# The fast reader of a line's bytes (see `LinePreparer._parse`).
_FAST_JSON = msgspec.json.Decoder()

# Ids end up in URLs and (for sessions) in directory names: pi writes UUIDs for headers
# and 8 hex digits for entries; anything with a slash, a space or a lone dot is refused.
_ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,64}")


class Skip(NamedTuple):
    number: int
    reason: str


class Warn(NamedTuple):
    number: int
    message: str


class RawObject(NamedTuple):
    number: int
    value: dict[str, Any]
    text: str


class PreparedEntry(NamedTuple):
    number: int
    eid: str
    pid: str | None
    line: str  # the text stored for the entry (see stored_line)
    columns: tuple[str, str, str, str, str, int, int]  # entry_row_columns(entry)
    # What the entry changes besides itself: ("label", target id, label or ""),
    # ("name", session name) or ("user",) for a user message; else None.
    effect: tuple[str, ...] | None
    # usage_with_day(entry): what it adds to the usage totals. (The types are spelled
    # out for `read_ahead`, which sends entries between processes with msgspec.)
    usage: tuple[EntryUsage, str | None] | None = None


# What `LinePreparer` gives for a line.
Record = Skip | Warn | RawObject | PreparedEntry


def valid_id(value: object) -> bool:
    """True for an id we accept for a session or an entry (and its parentId)."""
    return isinstance(value, str) and id_problem("", value) is None


def id_problem(what: str, value: str) -> str | None:
    """Why `value` is not a valid id (None when it is)."""
    if value.isalnum() and value.isascii() and len(value) <= 64:  # (pi's ids: cheaper)
        return None
    if _ID_RE.fullmatch(value) is not None and value not in (".", ".."):
        return None
    if len(value) > 64:
        return f"{what} is longer than 64 characters"
    return (
        f"{what} {value[:64]!r} is not a valid id (letters, digits and . _ : - only, "
        "not '.' or '..')"
    )


def header_problem(value: dict[str, Any], number: int = 1) -> str | None:
    """Why the first object read (line `number`) cannot start a pi session, in words a
    person reads in the import list (None when it can)."""
    where = f"line {number}" + (" (the first line that could be read)" if number > 1 else "")
    etype = value.get("type")
    if etype != "session":
        if isinstance(etype, str) and etype.strip():
            what = f"a {clean_text(etype)[:40]!r} entry, so the start of the file is missing"
        else:
            what = 'a JSON object without a "type"'
        return f"{where} is not a pi session header: it is {what}"
    if not isinstance(value.get("id"), str) or not value["id"]:
        return f"{where} is a pi session header without an id"
    return None


def header_text_field(header: dict[str, Any], key: str) -> str:
    """A header's `cwd` or `parentSession` as the session row keeps it: text any database
    accepts, cut to `MAX_CWD_CHARS` (the stored header line keeps the original)."""
    value = header.get(key, "")
    if value is None:
        value = ""
    return clean_text(value if isinstance(value, str) else str(value))[:MAX_CWD_CHARS]


def field_warnings(number: int, value: dict[str, Any]) -> list[Warn]:
    """A warning for each short field of a header or entry longer than pages show."""
    return [
        Warn(
            number,
            f"line {number}: {field} is {length:,} characters long; pages show its first "
            f"{limit:,} (export keeps it whole)",
        )
        for field, length, limit in oversized_fields(value)
    ]


def is_current_header(header: dict[str, Any]) -> bool:
    """A v3 header: its entries are imported as they stream in, without migration."""
    version = header.get("version")
    return (
        header.get("type") == "session"
        and isinstance(version, (int, float))
        and not isinstance(version, bool)
        and version >= 3
    )


def entry_problem(value: dict[str, Any]) -> str | None:
    """Why an object cannot be stored as an entry (None when it can)."""
    etype = value.get("type")
    if etype == "session":
        return "a second session header"
    if not isinstance(etype, str) or not etype:
        return "entry has no type"
    eid = value.get("id")
    if not isinstance(eid, str) or not eid:
        return "entry has no id"
    problem = id_problem("entry id", eid)
    if problem:
        return problem
    if etype == "message" and not isinstance(value.get("message"), dict):
        # pi loads it, then fails building the context (its message has no role).
        return "message entry without a message object"
    pid = value.get("parentId")
    if pid is not None and not isinstance(pid, str):
        return "entry parentId is neither a string nor null"
    if isinstance(pid, str):
        return id_problem("entry parentId", pid)
    return None


def stored_line(text: str, value: dict[str, Any]) -> str:
    """The text stored for an entry: the line as written when it is one JSON object with
    nothing around it (pi's lines always are), so export gives back exactly what was
    imported; else (a CR before the newline, padding) JSON.stringify's text of it."""
    if text[:1] == "{" and text[-1:] == "}":
        return text
    return serialize_entry(value)


def prepare_entry(number: int, value: dict[str, Any], text: str | None) -> PreparedEntry | Skip:
    """The record for one entry object; `text` is its line (None for a migrated entry)."""
    problem = entry_problem(value)
    if problem:
        return Skip(number, problem)
    etype = value["type"]
    effect: tuple[str, ...] | None = None
    if etype == "label":
        target = value.get("targetId")
        if isinstance(target, str):
            label = value.get("label")
            effect = ("label", target, label if isinstance(label, str) and label else "")
    elif etype == "session_info":
        name = value.get("name")
        if isinstance(name, str) and name:
            effect = ("name", name)
    elif etype == "message":
        message = value.get("message")
        if isinstance(message, dict) and message.get("role") == "user":
            effect = ("user",)
    return PreparedEntry(
        number,
        value["id"],
        value.get("parentId"),
        stored_line(text, value) if text is not None else serialize_entry(value),
        entry_row_columns(value),
        effect,
        usage_with_day(value),
    )


class LinePreparer:
    """Splits a session file fed in chunks into lines and turns each into a record."""

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES, *, lines_before: int = 0):
        """`lines_before` > 0 starts after that many lines of a v3 file (the follower
        reading what was appended): every object is then an entry."""
        self.max_line_bytes = max_line_bytes
        self.number = lines_before  # lines seen
        self._held: list[bytes] = []  # the start of a line that continues in a later chunk
        self._held_size = 0
        self._overlong: int | None = None  # bytes of an overlong line being dropped
        # After the first object: "entries" or "objects".
        self._mode: str | None = "entries" if lines_before else None

    def feed(self, chunk: bytes) -> list[Record]:
        """Records for the lines that end in this chunk."""
        out: list[Record] = []
        lines = chunk.split(b"\n")
        rest = lines.pop()
        for index, raw in enumerate(lines):
            held = index == 0 and (self._held or self._overlong is not None)
            self._line(self._release(raw) if held else raw, out)
        if rest:
            self._hold(rest)
        return out

    def end(self) -> list[Record]:
        """Records for a last line without a newline."""
        out: list[Record] = []
        if self._held or self._overlong is not None:
            self._line(self._release(b""), out)
        return out

    def _hold(self, piece: bytes) -> None:
        if self._overlong is not None:
            self._overlong += len(piece)
            return
        self._held.append(piece)
        self._held_size += len(piece)
        if self._held_size > self.max_line_bytes:
            self._overlong, self._held, self._held_size = self._held_size, [], 0

    def _release(self, last: bytes) -> bytes | int:
        """The whole held line, or its size when it was too long to keep."""
        if self._overlong is not None:
            size, self._overlong = self._overlong + len(last), None
            return size
        self._held.append(last)
        raw, self._held, self._held_size = b"".join(self._held), [], 0
        return raw

    def _line(self, raw: bytes | int, out: list[Record]) -> None:
        self.number += 1
        number = self.number
        if isinstance(raw, int) or len(raw) > self.max_line_bytes:
            size = raw if isinstance(raw, int) else len(raw)
            out.append(
                Skip(number, f"line too long ({size} bytes; the limit is {self.max_line_bytes})")
            )
            return
        value, text, error = self._parse(raw, number, out)
        if error is None and value is not None and line_may_nest_deeper(text):
            if nesting_exceeds(value):
                value = None
                error = f"JSON nested deeper than {MAX_JSON_DEPTH} levels (the limit)"
        if error is not None:
            out.append(Skip(number, error))
            return
        if value is None:
            return
        if len(text) > SHORTEST_FIELD_LIMIT:  # (a shorter line has no field over its limit)
            out.extend(field_warnings(number, value))
        if self._mode == "entries":
            out.append(prepare_entry(number, value, text))
        else:
            out.append(RawObject(number, value, text))
            if self._mode is None:
                self._mode = "entries" if is_current_header(value) else "objects"

    @classmethod
    def _parse(
        cls, raw: bytes, number: int, out: list[Record]
    ) -> tuple[dict[str, Any] | None, str, str | None]:
        """(object, text, None), (None, text, why it is skipped) or (None, text, None) for
        a blank line. A line that is one JSON object in valid UTF-8 (nearly every line
        of a pi file) is read by msgspec, three times faster than `json`; any other line
        takes the exact path."""
        value = cls._fast_object(raw)
        if value is not None:
            return value, raw.decode("utf-8"), None
        return cls._exact_parse(raw, number, out)

    @staticmethod
    def _fast_object(raw: bytes) -> dict[str, Any] | None:
        """The object on the line, or None to leave the line to the exact path. Where it
        succeeds, msgspec reads what `json` reads (exact integers of any size, the last of
        repeated keys at the first one's place, correctly rounded floats); it declines
        what `json` would read differently or refuse: invalid UTF-8, a byte-order mark,
        lone surrogates, numbers beyond a double, NaN (`tests/unit/test_import_lines.py`
        compares the two)."""
        try:
            value = _FAST_JSON.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            return None
        return value if type(value) is dict else None

    @staticmethod
    def _exact_parse(
        raw: bytes, number: int, out: list[Record]
    ) -> tuple[dict[str, Any] | None, str, str | None]:
        """`_parse` by pi's rules, with our messages: bytes that are not UTF-8 are replaced
        and reported, a byte-order mark at the start of the file is dropped, and the JSON
        is read by `parse_session_line`."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            out.append(
                Warn(
                    number,
                    f"line {number}: bytes that are not UTF-8 at byte {exc.start + 1} of the "
                    "line were replaced with U+FFFD (as pi reads them)",
                )
            )
            text = raw.decode("utf-8", errors="replace")
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        value, error = parse_session_line(text)
        return value, text, error
