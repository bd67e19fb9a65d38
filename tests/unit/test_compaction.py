"""Cut points, prepare_compaction, file operations, token estimates."""

from __future__ import annotations

import random

import pytest

from sessions_app.core.compaction import (
    CompactionSettings,
    FileOps,
    compute_file_lists,
    extract_file_ops_from_message,
    find_cut_point,
    find_turn_start_index,
    find_valid_cut_points,
    format_file_operations,
    prepare_compaction,
)
from sessions_app.core.tokens import (
    entry_token_estimate,
    estimate_tokens,
    should_compact,
)
from tests.conformance._cases import golden_params, require_case
from tests.conformance.golden import load_golden
from tests.support.context_entries import assistant, entry, random_path, tool_result, user


def brute_force_cut_point(entries, start, end, keep):
    """Spec-literal reference: list every cut point, then search."""
    cuts = find_valid_cut_points(entries, start, end)
    if not cuts:
        return {"firstKeptEntryIndex": start, "turnStartIndex": -1, "isSplitTurn": False}
    acc = 0
    cut = cuts[0]
    for i in range(end - 1, start - 1, -1):
        if entries[i]["type"] != "message":
            continue
        acc += estimate_tokens(entries[i]["message"])
        if acc >= keep:
            cut = next((c for c in cuts if c >= i), cut)
            break
    while cut > start and entries[cut - 1]["type"] not in ("message", "compaction"):
        cut -= 1
    e = entries[cut]
    is_user = e["type"] == "message" and e["message"]["role"] == "user"
    ts = -1 if is_user else find_turn_start_index(entries, cut, start)
    return {
        "firstKeptEntryIndex": cut,
        "turnStartIndex": ts,
        "isSplitTurn": not is_user and ts != -1,
    }


@pytest.mark.parametrize("seed", range(60))
def test_find_cut_point_matches_brute_force(seed):
    rng = random.Random(seed)
    es = random_path(rng, rng.randint(1, 80))
    start = rng.randint(0, len(es) - 1)
    end = rng.randint(start, len(es))
    keep = rng.choice([0, 1, 10, 50, 200, 1000, 10**9, float("inf"), float("nan")])
    assert find_cut_point(es, start, end, keep) == brute_force_cut_point(es, start, end, keep)


def test_never_cuts_at_tool_result():
    es = [
        user("u0", None, text="x" * 40),
        assistant("a1", "u0", tool_calls=[("read", {"path": "a"})]),
        tool_result("t2", "a1", text="y" * 4000),
        assistant("a3", "t2", text="ok"),
    ]
    got = find_cut_point(es, 0, 4, 10)
    # the budget is reached at the tool result; the cut moves forward to the next valid point
    assert got == {"firstKeptEntryIndex": 3, "turnStartIndex": 0, "isSplitTurn": True}
    # with nothing valid after it, pi falls back to the first cut point
    assert find_cut_point(es, 0, 3, 10)["firstKeptEntryIndex"] == 0


def test_cut_moves_back_over_settings_entries():
    es = [
        user("u0", None, text="x" * 400),
        entry("m1", "u0", "model_change", provider="p", modelId="m"),
        entry("l2", "m1", "label", targetId="u0", label="L"),
        user("u3", "l2", text="y" * 400),
    ]
    got = find_cut_point(es, 0, 4, 50)
    assert got == {"firstKeptEntryIndex": 1, "turnStartIndex": 0, "isSplitTurn": True}


def test_no_cut_points_keeps_from_start():
    es = [tool_result("t0", None), entry("m1", "t0", "model_change", provider="p", modelId="m")]
    assert find_cut_point(es, 0, 2, 1) == {
        "firstKeptEntryIndex": 0,
        "turnStartIndex": -1,
        "isSplitTurn": False,
    }


def test_custom_estimator_is_used():
    es = [user("u0", None), user("u1", "u0"), user("u2", "u1")]
    got = find_cut_point(es, 0, 3, 2, estimator=lambda m: 1)
    assert got["firstKeptEntryIndex"] == 1


def test_prepare_compaction_none_cases():
    assert prepare_compaction([], CompactionSettings()) is None
    es = [
        user("u0", None),
        entry("c1", "u0", "compaction", summary="S", firstKeptEntryId="u0", tokensBefore=1),
    ]
    assert prepare_compaction(es, CompactionSettings()) is None


def test_prepare_compaction_summarizes_from_previous_first_kept():
    es = [
        user("u0", None, text="a" * 400),
        assistant("a1", "u0", text="b" * 400, tool_calls=[("edit", {"path": "x.py"})]),
        user("u2", "a1", text="c" * 400),
        entry(
            "c3",
            "u2",
            "compaction",
            summary="PREV",
            firstKeptEntryId="u2",
            tokensBefore=1,
            details={"readFiles": ["old.txt"], "modifiedFiles": ["mod.txt"]},
        ),
        assistant(
            "a4",
            "c3",
            text="d" * 400,
            tool_calls=[("read", {"path": "r.py"}), ("write", {"path": "w.py"})],
        ),
        user("u5", "a4", text="e" * 400),
        assistant("a6", "u5", text="f" * 40),
    ]
    prep = prepare_compaction(es, CompactionSettings(keep_recent_tokens=50))
    assert prep.first_kept_entry_id == "u5"
    assert prep.previous_summary == "PREV"
    # u2 was kept by the previous compaction and is summarized now; the compaction itself is not a message
    assert [m["role"] for m in prep.messages_to_summarize] == ["user", "assistant"]
    assert prep.messages_to_summarize[0] is es[2]["message"]
    assert compute_file_lists(prep.file_ops) == {
        "readFiles": ["old.txt", "r.py"],
        "modifiedFiles": ["mod.txt", "w.py"],
    }
    d = prep.to_dict()
    assert d["settings"] == {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 50}
    assert d["tokensBefore"] == 100  # usage of a6 (last assistant), nothing after it


def test_prepare_compaction_hook_details_ignored():
    es = [
        user("u0", None),
        entry(
            "c1",
            "u0",
            "compaction",
            summary="S",
            firstKeptEntryId="u0",
            tokensBefore=1,
            fromHook=True,
            details={"readFiles": ["h"]},
        ),
        user("u2", "c1"),
    ]
    prep = prepare_compaction(es, {"keepRecentTokens": 0})
    assert compute_file_lists(prep.file_ops) == {"readFiles": [], "modifiedFiles": []}


def test_file_ops_extraction_rules():
    ops = FileOps()
    msg = assistant(
        "a",
        None,
        tool_calls=[
            ("read", {"path": "r"}),
            ("read", {"path": ""}),
            ("bash", {"path": "b"}),
            ("edit", {"path": "e"}),
            ("write", {"path": "w"}),
            ("read", {"file": "nope"}),
            ("read", {"path": 3}),
        ],
    )["message"]
    extract_file_ops_from_message(msg, ops)
    extract_file_ops_from_message(user("u", None)["message"], ops)
    assert list(ops.read) == ["r"] and list(ops.edited) == ["e"] and list(ops.written) == ["w"]


def test_compute_and_format_file_lists_js_order():
    ops = FileOps()
    ops.add_read(["b", "a", "\uff5e", "\U0001f600", "w"])
    ops.written["w"] = None
    lists = compute_file_lists(ops)
    assert lists["readFiles"] == [
        "a",
        "b",
        "\U0001f600",
        "\uff5e",
    ]  # UTF-16 order: surrogates before U+FF5E
    assert lists["modifiedFiles"] == ["w"]
    assert format_file_operations([], []) == ""
    assert format_file_operations(["a"], ["b", "c"]) == (
        "\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nb\nc\n</modified-files>"
    )


def test_settings_round_trip_and_should_compact():
    s = CompactionSettings.from_dict({"reserveTokens": 1000})
    assert s == CompactionSettings(enabled=True, reserve_tokens=1000, keep_recent_tokens=20000)
    assert s.to_dict() == {"enabled": True, "reserveTokens": 1000, "keepRecentTokens": 20000}
    assert should_compact(9001, 10000, s) is True
    assert should_compact(9000, 10000, s) is False
    assert should_compact(10**9, 10000, CompactionSettings(enabled=False)) is False


# Cut points from stored per-entry estimates equal the ones pi's walk computes.
#
# ``find_cut_point(..., estimates=...)`` / ``prepare_compaction(..., estimates=...)`` sum
# the ``entry_token_estimate`` figures the database keeps instead of estimating each
# message; these tests hold them to the plain search on pi's golden cases and on
# generated sessions (short and long, so the block sums are crossed at every offset).
CUTPOINT = "cutpoint.json"


KEEPS = [-5, 0, 1, 10, 50, 200, 1000, 5000, 20_000, 10**9, float("inf"), float("nan")]


def _estimates(entries):
    return [entry_token_estimate(e) for e in entries]


def _golden_entries(case):
    return load_golden(CUTPOINT)["entrySets"][case["input"]["entriesRef"]]


@pytest.mark.parametrize("case", golden_params(CUTPOINT, functions={"findCutPoint"}))
def test_golden_find_cut_point_with_estimates(case):
    case = require_case(CUTPOINT, case)
    inp = case["input"]
    entries = _golden_entries(case)
    args = (entries, inp["startIndex"], inp["endIndex"], inp["keepRecentTokens"])
    plain = find_cut_point(*args)
    fast = find_cut_point(*args, estimates=_estimates(entries))
    assert fast == plain == case["output"]


@pytest.mark.parametrize("case", golden_params(CUTPOINT, functions={"prepareCompaction"}))
def test_golden_prepare_compaction_with_estimates(case):
    case = require_case(CUTPOINT, case)
    entries = _golden_entries(case)[: case["input"].get("sliceEnd")]
    settings = CompactionSettings.from_dict(case["input"]["settings"])
    plain = prepare_compaction(entries, settings)
    fast = prepare_compaction(entries, settings, estimates=_estimates(entries))
    if plain is None:
        assert fast is None
        assert case["output"] is None
        return
    assert fast is not None
    assert fast.to_dict() == plain.to_dict()
    assert fast.first_kept_entry_id == case["output"]["firstKeptEntryId"]


@pytest.mark.parametrize("seed", range(80))
def test_generated_paths_same_cut_with_estimates(seed):
    rng = random.Random(seed)
    entries = random_path(rng, rng.randint(1, 120))
    estimates = _estimates(entries)
    for _ in range(6):
        start = rng.randint(0, len(entries) - 1)
        end = rng.randint(start, len(entries) + 3)  # ends past the list are clamped
        keep = rng.choice(KEEPS)
        plain = find_cut_point(entries, start, end, keep)
        assert find_cut_point(entries, start, end, keep, estimates=estimates) == plain


@pytest.mark.parametrize("seed", range(6))
def test_long_paths_budget_reached_in_every_block(seed):
    """Thousands of entries: the budget falls at many offsets inside and across blocks."""
    rng = random.Random(1000 + seed)
    entries = random_path(rng, 6000)
    estimates = _estimates(entries)
    total = sum(estimates)
    keeps = sorted({rng.randint(1, total) for _ in range(25)} | {total, total + 1, 20_000})
    for keep in keeps:
        plain = find_cut_point(entries, 0, len(entries), keep)
        assert find_cut_point(entries, 0, len(entries), keep, estimates=estimates) == plain
    start = len(entries) // 3
    plain = find_cut_point(entries, start, len(entries) - 7, 4000)
    got = find_cut_point(entries, start, len(entries) - 7, 4000, estimates=estimates)
    assert got == plain


def test_unknown_estimates_are_computed():
    rng = random.Random(42)
    entries = random_path(rng, 2500)
    estimates = [None if rng.random() < 0.3 else v for v in _estimates(entries)]
    assert None in estimates
    for keep in (0, 77, 3000, 20_000, 10**9):
        plain = find_cut_point(entries, 0, len(entries), keep)
        assert find_cut_point(entries, 0, len(entries), keep, estimates=estimates) == plain
    none_known = [None] * len(entries)
    assert find_cut_point(entries, 0, len(entries), 3000, estimates=none_known) == (
        find_cut_point(entries, 0, len(entries), 3000)
    )


def test_estimates_are_what_the_walk_sums():
    """Stored figures are trusted: different figures move the cut (the walk uses them)."""
    entries = random_path(random.Random(3), 400)
    real = _estimates(entries)
    keep = sum(real) // 2
    plain = find_cut_point(entries, 0, len(entries), keep)
    assert find_cut_point(entries, 0, len(entries), keep, estimates=real) == plain
    doubled = [2 * v for v in real]
    moved = find_cut_point(entries, 0, len(entries), keep, estimates=doubled)
    assert moved["firstKeptEntryIndex"] > plain["firstKeptEntryIndex"]


def test_estimates_of_another_length_are_refused():
    entries = random_path(random.Random(5), 20)
    with pytest.raises(ValueError):
        find_cut_point(entries, 0, len(entries), 10, estimates=[1] * (len(entries) - 1))


def test_negative_start_index_keeps_pi_walk():
    entries = random_path(random.Random(9), 50)
    for keep in (0, 30, 10**9):
        plain = find_cut_point(entries, -3, len(entries), keep)
        got = find_cut_point(entries, -3, len(entries), keep, estimates=_estimates(entries))
        assert got == plain
