"""The usage counter (sessions_app.core.usage) against pi 1.6.0's own figures, and one
test per usage source."""

import json
from pathlib import Path

import pytest

from sessions_app.core.usage import (
    TOOLS_BUCKET,
    entry_day,
    entry_usage,
    usage_breakdown,
    usage_summary,
)
from tests.support.pi16_sessions import assert_same_breakdown
from tests.support.pi16_sessions import sessions_dir as pi16_dir
from tests.support.pi16_sessions import usage_cases as pi16_cases
from tests.support.usage_data import assistant, usage


def read_entries(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


def test_every_pi16_session_matches_pi_usage_breakdown():
    cases = pi16_cases()
    assert len(cases) >= 12
    for case in cases:
        entries = read_entries(pi16_dir() / case["file"])
        assert len(entries) == case["entryCount"]
        assert_same_breakdown(usage_breakdown(entries), case["usageBreakdown"])


def test_assistant_uses_response_model_when_present_and_tokens_ignore_total_tokens():
    entries = [
        assistant(
            "a1", "openrouter", "auto", usage(10, 5, 0, 0, 0.5, total=999), responseModel="x/y"
        ),
        assistant("a2", "openrouter", "auto", usage(1, 1, 1, 1, 0.25)),
        assistant("a3", "openrouter", "auto", usage(3, 0, 0, 0, 0.0), responseModel=None),
    ]
    assert usage_breakdown(entries) == [
        {"key": "openrouter/x/y", "cost": 0.5, "tokens": 15},
        {"key": "openrouter/auto", "cost": 0.25, "tokens": 7},
    ]


def test_usage_entries_count_under_their_own_model():
    entries = [
        {
            "type": "usage",
            "id": "u1",
            "kind": "cache_warm",
            "provider": "anthropic",
            "model": "claude-x",
            "usage": usage(100, 2, cost=0.01),
        },
        assistant("a1", "anthropic", "claude-x", usage(10, 0, cost=0.02)),
        {"type": "usage", "id": "u2", "provider": "google", "model": "g", "usage": usage(4)},
    ]
    assert usage_breakdown(entries) == [
        {"key": "anthropic/claude-x", "cost": pytest.approx(0.03), "tokens": 112},
        {"key": "google/g", "cost": 0.0, "tokens": 4},
    ]


def test_tool_results_compactions_and_branch_summaries_go_to_tools_bucket():
    tool_result = {
        "type": "message",
        "id": "t1",
        "message": {
            "role": "toolResult",
            "toolCallId": "c",
            "content": [],
            "usage": usage(7, 3, cost=0.1),
        },
    }
    plain_tool_result = {
        "type": "message",
        "id": "t2",
        "message": {"role": "toolResult", "content": []},
    }
    compaction = {
        "type": "compaction",
        "id": "c1",
        "summary": "s",
        "usage": usage(50, 10, cost=0.2),
    }
    branch = {
        "type": "branch_summary",
        "id": "b1",
        "summary": "s",
        "usage": usage(20, 0, 5, cost=0.3),
    }
    entries = [tool_result, plain_tool_result, compaction, branch]
    assert [entry_usage(e) is None for e in entries] == [False, True, False, False]
    (row,) = usage_breakdown(entries)
    assert row["key"] == TOOLS_BUCKET
    assert row["tokens"] == 10 + 60 + 25
    assert row["cost"] == pytest.approx(0.6, abs=1e-12)


def test_zero_buckets_dropped_and_order_by_cost_then_first_seen():
    entries = [
        assistant("a", "p", "zero", usage(0, 0, cost=0.0)),
        assistant("b", "p", "cheap", usage(5, cost=0.0)),
        assistant("c", "p", "tied", usage(1, cost=0.0)),
        assistant("d", "p", "dear", usage(1, cost=2.0)),
        assistant("e", "p", "nousage", None),
        {"type": "custom", "id": "x", "usage": usage(9, cost=9)},  # not a usage source
        {"type": "message", "id": "u", "message": {"role": "user", "usage": usage(9, cost=9)}},
    ]
    assert [r["key"] for r in usage_breakdown(entries)] == ["p/dear", "p/cheap", "p/tied"]


def test_missing_provider_and_broken_numbers_count_zero_not_nan():
    entries = [
        {
            "type": "message",
            "id": "a",
            "message": {"role": "assistant", "model": "m", "usage": {"input": "x", "output": 2}},
        },
        {
            "type": "usage",
            "id": "u",
            "provider": None,
            "model": "m",
            "usage": usage(1, cost=float("inf")),
        },
    ]
    assert usage_breakdown(entries) == [
        {"key": "undefined/m", "cost": 0.0, "tokens": 2},
        {"key": "null/m", "cost": 0.0, "tokens": 1},
    ]


def test_summary_totals_by_day_and_model_and_cache_hit_ratio():
    first = assistant("a", "p", "m", usage(100, 10, 300, 100, cost=1.0))
    second = assistant("b", "p", "n", usage(50, 5, 0, 0, cost=0.5))
    second["timestamp"] = "2026-01-03T23:30:00-02:00"  # 2026-01-04 in UTC
    summary = usage_summary([first, second])
    totals = summary["totals"]
    assert summary["breakdown"] == [
        {"key": "p/m", "cost": 1.0, "tokens": 510},
        {"key": "p/n", "cost": 0.5, "tokens": 55},
    ]
    assert (totals["tokens"], totals["cost"]) == (565, 1.5)
    assert totals["cacheHitRatio"] == pytest.approx(300 / 550)
    assert [d["day"] for d in totals["byDay"]] == ["2026-01-02", "2026-01-04"]
    assert totals["byModel"][0]["cacheHitRatio"] == pytest.approx(300 / 500)
    assert totals["byModel"][1]["cacheHitRatio"] == 0.0
    assert entry_day({"timestamp": "garbage"}) is None
    assert entry_day({"timestamp": "2026-13-03T00:00:00.000Z"}) is None
    assert entry_day({"timestamp": "2026-02-30T00:00:00Z"}) is None
    assert entry_day({"timestamp": 1736987937000}) is None


def test_bucket_keys_are_storable_whatever_the_file_says():
    """A model name with a lone surrogate or a NUL (JSON can carry both) still gives a key
    every database stores; real keys are unchanged."""
    from sessions_app.core.usage import entry_usage

    def key_of(provider, model):
        message = {"role": "assistant", "provider": provider, "model": model, "usage": {"input": 1}}
        return entry_usage({"type": "message", "message": message}).key

    assert key_of("anthropic", "claude-sonnet-4-5") == "anthropic/claude-sonnet-4-5"
    assert key_of("\udfff", "m\x00") == "\ufffd/m\ufffd"
    key_of("\udfff", "x").encode("utf-8")  # would raise with the surrogate kept
