"""cutpoint.json: findCutPoint, findTurnStartIndex, prepareCompaction, buildSessionContext."""

from __future__ import annotations

import pytest

from sessions_app.core.compaction import (
    CompactionSettings,
    compute_file_lists,
    find_cut_point,
    find_turn_start_index,
    prepare_compaction,
)
from sessions_app.core.messages import build_session_context, convert_to_llm
from sessions_app.core.tokens import estimate_context_tokens

from ._cases import golden_params, require_case
from .golden import load_golden

NAME = "cutpoint.json"


def _entries(case):
    return load_golden(NAME)["entrySets"][case["input"]["entriesRef"]]


def _summary(messages):
    return {
        "count": len(messages),
        "roles": [m.get("role") for m in messages],
        "timestamps": [m.get("timestamp") for m in messages],
    }


@pytest.mark.parametrize("case", golden_params(NAME, functions={"findCutPoint"}))
def test_find_cut_point(case):
    case = require_case(NAME, case)
    inp = case["input"]
    got = find_cut_point(
        _entries(case), inp["startIndex"], inp["endIndex"], inp["keepRecentTokens"]
    )
    assert got == case["output"]


@pytest.mark.parametrize("case", golden_params(NAME, functions={"findTurnStartIndex"}))
def test_find_turn_start_index(case):
    case = require_case(NAME, case)
    inp = case["input"]
    assert (
        find_turn_start_index(_entries(case), inp["entryIndex"], inp["startIndex"])
        == case["output"]
    )


@pytest.mark.parametrize("case", golden_params(NAME, functions={"prepareCompaction"}))
def test_prepare_compaction(case):
    case = require_case(NAME, case)
    inp = case["input"]
    entries = _entries(case)
    if "sliceEnd" in inp:
        entries = entries[: inp["sliceEnd"]]
    prep = prepare_compaction(entries, CompactionSettings.from_dict(inp["settings"]))
    expected = case["output"]
    if expected is None:
        assert prep is None
        return
    assert prep is not None
    d = prep.to_dict()
    got = {
        "firstKeptEntryId": d["firstKeptEntryId"],
        "isSplitTurn": d["isSplitTurn"],
        "tokensBefore": d["tokensBefore"],
        "previousSummary": d.get("previousSummary"),
        "messagesToSummarize": _summary(d["messagesToSummarize"]),
        "turnPrefixMessages": _summary(d["turnPrefixMessages"]),
        "fileOps": d["fileOps"],
        **compute_file_lists(prep.file_ops),
        "settings": d["settings"],
    }
    if "messagesToSummarizeFull" in expected:
        got["messagesToSummarizeFull"] = d["messagesToSummarize"]
    if "turnPrefixMessagesFull" in expected:
        got["turnPrefixMessagesFull"] = d["turnPrefixMessages"]
    assert got == expected


@pytest.mark.parametrize("case", golden_params(NAME, functions={"buildSessionContext"}))
def test_build_session_context_fixture(case):
    case = require_case(NAME, case)
    entries = _entries(case)
    ctx = build_session_context(entries)
    got = {
        "messages": _summary(ctx["messages"]),
        "thinkingLevel": ctx["thinkingLevel"],
        "model": ctx["model"],
        "estimateContextTokens": estimate_context_tokens(ctx["messages"]),
        "llmMessages": _summary(convert_to_llm(ctx["messages"])),
    }
    assert got == case["output"]
