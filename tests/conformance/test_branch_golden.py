"""branch.json: collectEntriesForBranchSummary (+ prepareBranchEntries per budget),
serializeConversation and prepareBranchEntries, every case compared exactly."""

from __future__ import annotations

import pytest

from sessions_app.core.compaction import compute_file_lists, format_file_operations
from sessions_app.core.messages import convert_to_llm
from sessions_app.core.summaries import prepare_branch_entries, serialize_conversation
from sessions_app.core.tree import SessionTree

from ._cases import golden_params, require_case

NAME = "branch.json"


def _summary(messages):
    return {
        "count": len(messages),
        "roles": [m.get("role") for m in messages],
        "timestamps": [m.get("timestamp") for m in messages],
    }


def _prepared(entries, budget):
    prep = prepare_branch_entries(entries, budget)
    lists = compute_file_lists(prep.file_ops)
    return prep, lists


@pytest.mark.parametrize("case", golden_params(NAME, functions={"collectEntriesForBranchSummary"}))
def test_collect_entries_for_branch_summary(case):
    case = require_case(NAME, case)
    inp = case["input"]
    tree = SessionTree(inp["entries"])
    collected = tree.collect_entries_for_branch_summary(inp["oldLeafId"], inp["targetId"])
    out = case["output"]
    assert [e["id"] for e in collected["entries"]] == out["entryIds"]
    assert collected["commonAncestorId"] == out["commonAncestorId"]
    got_prepared = []
    for budget in inp["tokenBudgets"]:
        prep, lists = _prepared(collected["entries"], budget)
        got_prepared.append(
            {
                "tokenBudget": budget,
                "messages": _summary(prep.messages),
                "totalTokens": prep.total_tokens,
                "fileOps": prep.file_ops.sorted_dict(),
                "readFiles": lists["readFiles"],
                "modifiedFiles": lists["modifiedFiles"],
                "fileOpsText": format_file_operations(lists["readFiles"], lists["modifiedFiles"]),
                "serialized": serialize_conversation(convert_to_llm(prep.messages)),
            }
        )
    assert got_prepared == out["prepared"]


@pytest.mark.parametrize("case", golden_params(NAME, functions={"serializeConversation"}))
def test_serialize_conversation(case):
    case = require_case(NAME, case)
    assert serialize_conversation(case["input"]["messages"]) == case["output"]


@pytest.mark.parametrize("case", golden_params(NAME, functions={"prepareBranchEntries"}))
def test_prepare_branch_entries(case):
    case = require_case(NAME, case)
    inp = case["input"]
    prep, lists = _prepared(inp["entries"], inp["tokenBudget"])
    got = {
        "messages": prep.messages,
        "totalTokens": prep.total_tokens,
        "fileOps": prep.file_ops.sorted_dict(),
        "readFiles": lists["readFiles"],
        "modifiedFiles": lists["modifiedFiles"],
    }
    assert got == case["output"]
