"""Serialization, prompts, request builders and summary assembly (sessions_app.core.summaries)."""

from __future__ import annotations

import pytest

from sessions_app.core.compaction import CompactionSettings, prepare_compaction
from sessions_app.core.summaries import (
    BRANCH_SUMMARY_MAX_TOKENS,
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    COMPACTION_SUMMARY_PROMPT,
    COMPACTION_UPDATE_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    assemble_branch_summary,
    assemble_compaction_summary,
    branch_token_budget,
    build_branch_summary_request,
    build_compaction_request,
    build_turn_prefix_request,
    plan_compaction_requests,
    prepare_branch_entries,
    request_text,
    serialize_conversation,
)
from tests.support.context_entries import SUMMARY_HEADINGS, assistant, entry, tool_result, user


def test_serialize_roles_and_tool_calls():
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image"},
                {"type": "text", "text": "b"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "t1"},
                {"type": "text", "text": "x"},
                {"type": "thinking", "thinking": "t2"},
                {
                    "type": "toolCall",
                    "name": "read",
                    "arguments": {"path": "p", "10": 1, "2": [1.0, "\u00e9"]},
                },
                {"type": "toolCall", "name": "ls", "arguments": {}},
            ],
        },
        {"role": "user", "content": ""},
        {"role": "toolResult", "content": [{"type": "text", "text": "ok"}]},
    ]
    assert serialize_conversation(msgs) == (
        "[User]: ab\n\n[Assistant thinking]: t1\nt2\n\n[Assistant]: x\n\n"
        '[Assistant tool calls]: read(2=[1,"\u00e9"], 10=1, path="p"); ls()\n\n[Tool result]: ok'
    )


def test_tool_result_cut_at_2000_utf16_units():
    text = "a" * 1999 + "\U0001f600" + "tail"
    out = serialize_conversation(
        [{"role": "toolResult", "content": [{"type": "text", "text": text}]}]
    )
    head, note = out.split("\n\n[... ")
    assert head == "[Tool result]: " + "a" * 1999 + "\ud83d"  # JS slices inside the surrogate pair
    assert note == "5 more characters truncated]"
    short = serialize_conversation(
        [{"role": "toolResult", "content": [{"type": "text", "text": "x" * 2000}]}]
    )
    assert short == "[Tool result]: " + "x" * 2000


def test_prompts_keep_the_structure():
    for heading in SUMMARY_HEADINGS:
        assert heading in COMPACTION_SUMMARY_PROMPT
        assert heading in COMPACTION_UPDATE_PROMPT
    for heading in SUMMARY_HEADINGS[:-1]:
        assert heading in BRANCH_SUMMARY_PROMPT
    assert "## Critical Context" not in BRANCH_SUMMARY_PROMPT
    assert "Do not continue the conversation" in SUMMARIZATION_SYSTEM_PROMPT


def test_compaction_request_budget_previous_summary_and_focus():
    msgs = [user("u", None, text="hello")["message"]]
    req = build_compaction_request(msgs, reserve_tokens=16384)
    assert req["system"] == SUMMARIZATION_SYSTEM_PROMPT
    assert req["max_tokens"] == 13107
    text = request_text(req)
    assert req["messages"][0]["role"] == "user"
    assert text.startswith("<conversation>\n[User]: hello\n</conversation>\n\n")
    assert text.endswith(COMPACTION_SUMMARY_PROMPT)
    upd = build_compaction_request(
        msgs, reserve_tokens=1000, previous_summary="OLD", custom_instructions="auth"
    )
    body = request_text(upd)
    assert "<previous-summary>\nOLD\n</previous-summary>\n\n" in body
    assert body.endswith(COMPACTION_UPDATE_PROMPT + "\n\nAdditional focus: auth")
    assert upd["max_tokens"] == 800
    rep = build_compaction_request(msgs, custom_instructions="ONLY THIS", replace_instructions=True)
    assert request_text(rep).endswith("</conversation>\n\nONLY THIS")


def test_turn_prefix_and_branch_requests():
    msgs = [user("u", None, text="q")["message"]]
    assert build_turn_prefix_request(msgs, reserve_tokens=16384)["max_tokens"] == 8192
    br = build_branch_summary_request(msgs)
    assert br["max_tokens"] == BRANCH_SUMMARY_MAX_TOKENS == 2048
    assert request_text(br).endswith(BRANCH_SUMMARY_PROMPT)
    focus = build_branch_summary_request(msgs, custom_instructions="tests")
    assert request_text(focus).endswith("Additional focus: tests")
    rep = build_branch_summary_request(msgs, custom_instructions="X", replace_instructions=True)
    assert request_text(rep).endswith("\n\nX")
    assert branch_token_budget(128000) == 128000 - 16384
    assert branch_token_budget(200000, 1000) == 199000


def test_assembly_strings():
    assert (
        assemble_compaction_summary("H", None, ["r"], []) == "H\n\n<read-files>\nr\n</read-files>"
    )
    assert (
        assemble_compaction_summary("H", "P") == "H\n\n---\n\n**Turn Context (split turn):**\n\nP"
    )
    assert assemble_branch_summary("S", [], ["m"]) == (
        "The user explored a different conversation branch before returning here.\n"
        "Summary of that exploration:\n\nS\n\n<modified-files>\nm\n</modified-files>"
    )
    assert BRANCH_SUMMARY_PREAMBLE.endswith("exploration:\n\n")


def test_plan_requests_split_turn_without_history():
    es = [
        user("u0", None, text="x" * 40),
        assistant("a1", "u0", text="y" * 4000),
        tool_result("t2", "a1"),
        assistant("a3", "t2", text="z" * 4000),
    ]
    prep = prepare_compaction(es, CompactionSettings(keep_recent_tokens=10))
    assert prep.is_split_turn
    plan = plan_compaction_requests(prep)
    assert plan["history"] is None and plan["historyPlaceholder"] == "No prior history."
    assert plan["turnPrefix"]["max_tokens"] == 8192


def test_plan_requests_plain():
    es = [
        user("u0", None, text="x" * 400),
        assistant("a1", "u0", text="y" * 400),
        user("u2", "a1", text="z" * 400),
    ]
    prep = prepare_compaction(es, CompactionSettings(keep_recent_tokens=10))
    plan = plan_compaction_requests(prep, custom_instructions="focus")
    assert plan["turnPrefix"] is None and plan["historyPlaceholder"] is None
    assert request_text(plan["history"]).endswith("Additional focus: focus")


@pytest.mark.parametrize(
    "budget, expected_roles",
    [
        (0, ["branchSummary", "compactionSummary", "user", "assistant"]),
        (120, ["compactionSummary", "user", "assistant"]),  # summary over budget but taken (<90%)
        (20, ["assistant"]),
    ],
)
def test_prepare_branch_entries_budget(budget, expected_roles):
    es = [
        entry(
            "b0",
            None,
            "branch_summary",
            fromId="x",
            summary="s" * 400,
            details={"readFiles": ["r0"]},
        ),
        entry("c1", "b0", "compaction", summary="c" * 400, firstKeptEntryId="b0", tokensBefore=1),
        user("u2", "c1", text="u" * 40),
        tool_result("t3", "u2", text="ignored" * 100),
        assistant("a4", "t3", text="a" * 40, tool_calls=[("edit", {"path": "e.py"})]),
    ]
    prep = prepare_branch_entries(es, budget)
    assert [m["role"] for m in prep.messages] == expected_roles
    lists = prep.file_lists()
    assert lists["readFiles"] == ["r0"] and lists["modifiedFiles"] == ["e.py"]


def test_output_budgets_follow_pi_and_are_capped_by_the_model():
    msgs = [user("u", None, text="hello")["message"]]
    assert build_compaction_request(msgs, reserve_tokens=16384)["max_tokens"] == 13107
    assert (
        build_compaction_request(msgs, reserve_tokens=16384, model_max_tokens=4096)["max_tokens"]
        == 4096
    )
    assert (
        build_compaction_request(msgs, reserve_tokens=1000, model_max_tokens=4096)["max_tokens"]
        == 800
    )
    assert build_turn_prefix_request(msgs, reserve_tokens=16384)["max_tokens"] == 8192
    assert (
        build_turn_prefix_request(msgs, reserve_tokens=16384, model_max_tokens=5000)["max_tokens"]
        == 5000
    )
    assert build_branch_summary_request(msgs)["max_tokens"] == 2048
    # pi's message shape: one user message with one text part
    req = build_compaction_request(msgs)
    assert req["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": request_text(req)}]}
    ]
