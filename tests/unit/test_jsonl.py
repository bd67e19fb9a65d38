"""JSONL parse (with line-numbered errors), migration, serialization, round trip."""

from __future__ import annotations

import io
import json

from sessions_app.core.jsonl import (
    export_session_jsonl,
    iter_session_lines,
    migrate_session_entries,
    parse_session_entries,
    read_session,
    serialize_entry,
)

HEADER = {
    "type": "session",
    "version": 3,
    "id": "s1",
    "timestamp": "2025-01-01T00:00:00.000Z",
    "cwd": "/p",
}


def lines_of(*objs_or_text):
    out = []
    for o in objs_or_text:
        out.append(o if isinstance(o, str) else json.dumps(o))
    return "\n".join(out) + "\n"


def test_malformed_lines_reported_with_number_and_reason():
    text = lines_of(
        HEADER,
        "{broken",
        "",
        "   ",
        "[1, 2]",
        '"str"',
        "NaN",
        '{"a": NaN}',
        {"type": "message", "id": "a", "parentId": None},
    )
    got = list(iter_session_lines(io.StringIO(text)))
    errors = [(sl.line_number, sl.error) for sl in got if not sl.ok]
    assert [n for n, _ in errors] == [2, 5, 6, 7, 8]
    assert errors[0][1].startswith("invalid JSON")
    assert errors[1][1] == "not a JSON object (got array)"
    assert errors[2][1] == "not a JSON object (got string)"
    assert all(e for _, e in errors)
    ok = [sl for sl in got if sl.ok]
    assert [sl.line_number for sl in ok] == [1, 9]


def test_chunks_split_anywhere_and_bytes_and_crlf_and_bom():
    text = (
        "\ufeff"
        + json.dumps(HEADER)
        + "\r\n"
        + json.dumps({"type": "x", "t": "\u00e9\U0001f600"})
        + "\r\n{bad\r\n"
    )
    data = text.encode("utf-8")
    one_byte_chunks = [data[i : i + 1] for i in range(len(data))]
    got = list(iter_session_lines(one_byte_chunks))
    assert [sl.line_number for sl in got] == [1, 2, 3]
    assert got[0].value == HEADER
    assert got[1].value["t"] == "\u00e9\U0001f600"
    assert not got[2].ok
    assert [sl.value for sl in iter_session_lines([text])] == [sl.value for sl in got]


def test_invalid_utf8_does_not_crash():
    data = json.dumps(HEADER).encode() + b"\n" + b'{"type":"x","v":"\xff\xfe"}\n'
    got = list(iter_session_lines(io.BytesIO(data)))
    assert got[1].ok and got[1].value["v"] == "\ufffd\ufffd"


def test_parse_session_entries_is_silent_like_pi():
    assert parse_session_entries('{"a":1}\nnope\n\n{"b":2}') == [{"a": 1}, {"b": 2}]


def test_read_session_migrates_v1_and_reports_problems():
    v1 = lines_of(
        {"type": "session", "id": "old", "timestamp": "t", "cwd": "/p"},
        {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "hi"}},
        "garbage",
        {
            "type": "compaction",
            "timestamp": "t",
            "summary": "S",
            "firstKeptEntryIndex": 1,
            "tokensBefore": 1,
        },
    )
    imp = read_session(io.StringIO(v1))
    assert imp.migrated and imp.original_version == 1
    assert imp.header["version"] == 3
    assert [e["type"] for e in imp.entries] == ["message", "compaction"]
    assert imp.entries[1]["parentId"] == imp.entries[0]["id"]
    assert imp.entries[1]["firstKeptEntryId"] == imp.entries[0]["id"]
    assert [(e.line_number, e.error[:12]) for e in imp.errors] == [(3, "invalid JSON")]
    assert imp.ok

    dup = lines_of(
        HEADER,
        {"type": "message", "id": "a", "parentId": None},
        {"type": "message", "id": "a", "parentId": "a"},
    )
    bad = read_session([dup])
    assert not bad.ok
    assert {p.kind for p in bad.problems} == {"duplicate-id", "self-parent"}


def test_missing_header_is_reported():
    imp = read_session([lines_of({"type": "message", "id": "a", "parentId": None})])
    assert imp.header is None and not imp.ok


def test_migrate_current_version_is_noop():
    items = [
        dict(HEADER),
        {"type": "message", "id": "a", "parentId": None, "message": {"role": "hookMessage"}},
    ]
    assert migrate_session_entries(items) is False
    assert items[1]["message"]["role"] == "hookMessage"


def test_serialize_like_json_stringify():
    e = {
        "type": "message",
        "id": "a",
        "parentId": None,
        "n": 1.0,
        "f": 0.5,
        "s": '\u00e9\n"',
        "lone": "\ud800",
    }
    assert (
        serialize_entry(e)
        == '{"type":"message","id":"a","parentId":null,"n":1,"f":0.5,"s":"\u00e9\\n\\"","lone":"\\ud800"}'
    )


def test_import_export_import_round_trip():
    entries = [
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "timestamp": "t",
            "message": {"role": "user", "content": "h\u00e9llo \U0001f600", "timestamp": 1},
        },
        {
            "type": "label",
            "id": "l1",
            "parentId": "a1",
            "timestamp": "t",
            "targetId": "a1",
            "label": "x",
        },
    ]
    text = export_session_jsonl(HEADER, entries)
    assert text.endswith("\n") and text.count("\n") == 3
    first = read_session(io.StringIO(text))
    again = read_session(io.StringIO(export_session_jsonl(first.header, first.entries)))
    assert first.entries == entries == again.entries
    assert export_session_jsonl(again.header, again.entries) == text


def test_second_header_reported_with_its_line_number():
    text = lines_of(
        HEADER, {"type": "message", "id": "a", "parentId": None}, dict(HEADER, id="other")
    )
    imp = read_session([text])
    assert [(e.line_number, e.error) for e in imp.errors] == [
        (3, "session header that is not the first line (ignored)")
    ]
    assert [e["id"] for e in imp.entries] == ["a"]
