"""migrate.json: migrateSessionEntries (re-ided as the notes say) and parseSessionEntries."""

from __future__ import annotations

import copy

import pytest

from sessions_app.core.jsonl import (
    iter_session_lines,
    migrate_session_entries,
    parse_session_entries,
)

from ._cases import golden_params, require_case

NAME = "migrate.json"
_REF_KEYS = ("parentId", "firstKeptEntryId", "fromId", "targetId")


def _reid(entries):
    """Rename non-session ids e0001... in list order and rewrite references (golden notes)."""
    mapping = {}
    n = 0
    for e in entries:
        if e.get("type") != "session" and "id" in e:
            n += 1
            mapping[e["id"]] = f"e{n:04d}"
    for e in entries:
        if e.get("type") == "session":
            continue
        if "id" in e:
            e["id"] = mapping[e["id"]]
        for key in _REF_KEYS:
            if key in e and e[key] in mapping:
                e[key] = mapping[e[key]]
    return entries


@pytest.mark.parametrize("case", golden_params(NAME, functions={"migrateSessionEntries"}))
def test_migrate_session_entries(case):
    case = require_case(NAME, case)
    entries = copy.deepcopy(case["input"]["entries"])
    migrate_session_entries(entries)
    expected = case["output"]
    got = _reid(entries) if expected.get("reid") else entries
    assert got == expected["entries"]
    # key order matters for export: compare serialized order too
    assert [list(e) for e in got] == [list(e) for e in expected["entries"]]


@pytest.mark.parametrize("case", golden_params(NAME, functions={"parseSessionEntries"}))
def test_parse_session_entries(case):
    case = require_case(NAME, case)
    content = case["input"]["content"]
    assert parse_session_entries(content) == case["output"]
    # the streaming parser yields the same objects (it reports the rest as errors)
    streamed = [sl.value for sl in iter_session_lines([content]) if sl.ok]
    assert streamed == [v for v in case["output"] if isinstance(v, dict)]
