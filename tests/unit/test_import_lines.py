"""The pure half of an import: a session file's bytes, in chunks, to records."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.core.import_lines import (
    LinePreparer,
    PreparedEntry,
    RawObject,
    Skip,
    Warn,
    prepare_entry,
)
from sessions_app.core.jsonl import parse_session_line, serialize_entry
from sessions_app.core.preview import entry_row_columns

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "t", "cwd": "/p"}


def user(eid, parent, text):
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "t",
        "message": {"role": "user", "content": text, "timestamp": 1},
    }


def prepare(data: bytes, chunk: int, max_line_bytes: int = 1 << 20) -> list:
    preparer = LinePreparer(max_line_bytes)
    out = []
    for start in range(0, len(data), chunk):
        out += preparer.feed(data[start : start + chunk])
    return out + preparer.end()


MIXED = b"\n".join(
    [
        b"\xef\xbb\xbf" + serialize_entry(HEADER).encode(),  # a byte order mark first
        serialize_entry(user("a", None, "hello")).encode(),
        b"{not json",
        b"",  # blank lines are not records
        serialize_entry(user("b", "a", "caf\xc3\xa9")).encode(),
        b'{"type":"message","id":"c","parentId":"b","message":{"role":"user","content":"\xff"}}',
        serialize_entry(user("d", "c", "crlf")).encode() + b"\r",
        b'{"type":"label","id":"../x","parentId":"d","targetId":"a"}',
        b"[1, 2]",
        serialize_entry(user("e", "d", "no newline at the end")).encode(),
    ]
)


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 4096, len(MIXED)])
def test_records_do_not_depend_on_how_the_bytes_are_cut(chunk):
    assert prepare(MIXED, chunk) == prepare(MIXED, len(MIXED))


def test_each_line_gets_its_record_with_its_number():
    records = prepare(MIXED, 5)
    assert [type(r).__name__ for r in records] == [
        "RawObject",
        "PreparedEntry",
        "Skip",
        "PreparedEntry",
        "Warn",
        "PreparedEntry",
        "PreparedEntry",
        "Skip",
        "Skip",
        "PreparedEntry",
    ]
    header = records[0]
    assert header == RawObject(1, HEADER, serialize_entry(HEADER))  # the BOM is gone
    assert records[2].number == 3 and "JSON" in records[2].reason
    assert records[3].eid == "b" and records[3].number == 5
    bad_byte_at = MIXED.split(b"\n")[5].index(b"\xff") + 1
    assert records[4] == Warn(
        6,
        f"line 6: bytes that are not UTF-8 at byte {bad_byte_at} of the line were replaced "
        "with U+FFFD (as pi reads them)",
    )
    assert records[5].eid == "c" and "\ufffd" in records[5].line
    # A CR before the newline: stored as JSON.stringify writes the object.
    assert records[6].line == serialize_entry(user("d", "c", "crlf"))
    assert records[7].number == 8 and "'../x' is not a valid id" in records[7].reason
    assert records[8] == Skip(9, "not a JSON object (got array)")
    assert records[9].eid == "e" and records[9].number == 10


def test_a_file_ending_in_a_newline_has_no_extra_line():
    data = (serialize_entry(HEADER) + "\n" + serialize_entry(user("a", None, "x")) + "\n").encode()
    preparer = LinePreparer()
    assert len(preparer.feed(data)) == 2
    assert preparer.end() == [] and preparer.number == 2


def test_entries_of_a_v3_file_are_prepared_and_older_files_stay_objects():
    v2 = dict(HEADER, version=2)
    entry = user("a", None, "hi")
    lines = [serialize_entry(v2), serialize_entry(entry), serialize_entry({"type": "x"})]
    records = prepare("\n".join(lines).encode(), 1 << 16)
    # v1/v2 entries may have no id yet: the importer migrates them before checking.
    assert records == [
        RawObject(1, v2, lines[0]),
        RawObject(2, entry, lines[1]),
        RawObject(3, {"type": "x"}, lines[2]),
    ]
    lines[0] = serialize_entry(HEADER)
    lines.append(serialize_entry(HEADER))
    records = prepare("\n".join(lines).encode(), 1 << 16)
    assert records[1] == prepare_entry(2, entry, lines[1])
    assert records[2] == Skip(3, "entry has no id")
    assert records[3] == Skip(4, "a second session header")


def test_a_prepared_entry_carries_its_row_and_what_it_changes():
    entry = user("a", None, "  hello   there ")
    prepared = prepare_entry(7, entry, serialize_entry(entry))
    assert prepared == PreparedEntry(
        7, "a", None, serialize_entry(entry), entry_row_columns(entry), ("user",)
    )
    assert prepared.columns[4] == "hello there"
    label = {"type": "label", "id": "l", "parentId": "a", "targetId": "a", "label": "v1"}
    assert prepare_entry(8, label, None).effect == ("label", "a", "v1")
    unlabel = {"type": "label", "id": "m", "parentId": "l", "targetId": "a"}
    assert prepare_entry(9, unlabel, None).effect == ("label", "a", "")
    named = {"type": "session_info", "id": "n", "parentId": "m", "name": "Refactor"}
    assert prepare_entry(10, named, None).effect == ("name", "Refactor")
    unnamed = {"type": "session_info", "id": "o", "parentId": "n", "name": ""}
    assert prepare_entry(11, unnamed, None).effect is None
    # Without its line (a migrated entry) it is stored as JSON.stringify writes it.
    assert prepare_entry(12, named, None).line == serialize_entry(named)
    bad_parent = dict(named, parentId=5)
    assert prepare_entry(13, bad_parent, None) == Skip(
        13, "entry parentId is neither a string nor null"
    )


def test_an_overlong_line_is_counted_across_chunks_not_held():
    big = b"x" * 10_000_000
    data = serialize_entry(HEADER).encode() + b"\n" + big + b"\n" + b"[]"
    preparer = LinePreparer(max_line_bytes=1000)
    tracemalloc.start()
    records = []
    for start in range(0, len(data), 65536):
        records += preparer.feed(data[start : start + 65536])
        del start
    records += preparer.end()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert records[1] == Skip(2, "line too long (10000000 bytes; the limit is 1000)")
    assert records[2] == Skip(3, "not a JSON object (got array)")
    assert peak < 2_000_000  # the chunks, never the 10 MB line


@pytest.mark.parametrize("size", [999, 1000, 1001])
def test_the_size_limit_counts_the_line_without_its_newline(size):
    line = b'{"a":"' + b"y" * (size - 8) + b'"}'
    assert len(line) == size
    data = line + b"\n" + line  # with a newline, and at the very end without one
    for chunk in (3, 1000, 5000):
        records = prepare(data, chunk, max_line_bytes=1000)
        if size <= 1000:
            assert [type(r) for r in records] == [RawObject, RawObject]
        else:
            assert records == [
                Skip(1, f"line too long ({size} bytes; the limit is 1000)"),
                Skip(2, f"line too long ({size} bytes; the limit is 1000)"),
            ]


# --- the fast reader (msgspec) against the exact one (json, pi's rules) ------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def same(a, b) -> bool:
    """Equal with the same types all the way down (1, 1.0 and True differ; so do 0.0 and
    -0.0) and the same key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def exact_reading(raw: bytes):
    """What the exact path (json with pi's rules) makes of a line: (object or None, error)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not utf-8"
    return parse_session_line(text)


def fast_reading(raw: bytes):
    """(object, None) when the fast path takes the line, else None."""
    out: list = []
    value, text, error = LinePreparer._parse(raw, 2, out)
    return value, text, error, out


@settings(max_examples=300, deadline=None)
@given(value=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=6), ascii=st.booleans())
def test_the_fast_reader_reads_every_object_as_the_exact_one_does(value, ascii):
    raw = json.dumps(value, ensure_ascii=ascii, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )
    fast_value, text, error, out = fast_reading(raw)
    exact_value, exact_error = exact_reading(raw)
    assert error == exact_error
    assert same(fast_value, exact_value)
    if exact_error is None:
        assert text == raw.decode("utf-8") and out == []


# Bytes a writer might put on a line, good and bad, spliced into a valid object.
ODD_PIECES = [
    b"\x00",
    b"\x01",
    b"\x7f",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xef\xbb\xbf",
    b"\r",
    b"\t",
    b"\x0c",
    b"\xc2\xa0",
    b"\\",
    b'"',
    b"\\ud800",
    b"\\udc00",
    b"\\ud83d\\ude00",
    b"\\u0000",
    b"NaN",
    b"Infinity",
    b"-0",
    b"1e999",
    b"1e-999",
    b"12345678901234567890",
    b"-9223372036854775809",
    b"0.1e1",
    b"01",
    b"1.",
    b".5",
    b"+1",
    b"true",
    b"nul",
    b",",
    b":",
    b"{",
    b"}",
    b"[",
    b"]",
    b" ",
    b"\n",
    b"/*x*/",
    b"'",
    b"\xe2\x80\xa8",
]


@settings(max_examples=500, deadline=None)
@given(
    base=st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=4),
    cuts=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(ODD_PIECES)), max_size=3),
)
def test_the_fast_reader_never_accepts_what_the_exact_one_reads_differently(base, cuts):
    """Any line, however broken: where the fast path takes it, the exact path gives the
    same object; everything else goes to the exact path (so keeps its messages)."""
    raw = json.dumps(base, separators=(",", ":")).encode()
    for at, piece in cuts:
        at %= len(raw) + 1
        raw = raw[:at] + piece + raw[at:]
    try:
        fast = LinePreparer._fast_object(raw)
    except Exception as exc:  # (the fast path must only ever decline)
        raise AssertionError(f"the fast path raised {exc!r}") from exc
    if fast is not None:
        exact_value, exact_error = exact_reading(raw)
        assert exact_error is None and same(fast, exact_value), raw
    # and the whole record is what the exact path alone gives
    out: list = []
    value, text, error = LinePreparer._parse(raw, 2, out)
    slow_out: list = []
    slow = LinePreparer._exact_parse(raw, 2, slow_out)
    assert same(value, slow[0]) and (text, error, out) == (slow[1], slow[2], slow_out)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"n":18446744073709551616}',  # beyond 64 bits: an exact int, not a float
        b'{"n":-9223372036854775809}',
        b'{"n":1' + b"0" * 40 + b"}",
        b'{"x":1e400}',  # json reads inf; the fast reader declines
        b'{"s":"\\ud800"}',  # a lone surrogate stays in the string
        b'{"a":1,"a":2}',  # the last of repeated keys wins, at the first one's place
        b"\xef\xbb\xbf{}",
        b'{"a":"\xff"}',
        b"[1]",
        b"   ",
    ],
)
def test_lines_the_fast_reader_declines_or_must_read_exactly(raw):
    out: list = []
    value, text, error = LinePreparer._parse(raw, 1, out)
    slow_out: list = []
    slow_value, slow_text, slow_error = LinePreparer._exact_parse(raw, 1, slow_out)
    assert same(value, slow_value) and (text, error, out) == (slow_text, slow_error, slow_out)
