"""Cut points from stored per-entry estimates equal the ones pi's walk computes.

``find_cut_point(..., estimates=...)`` / ``prepare_compaction(..., estimates=...)`` sum
the ``entry_token_estimate`` figures the database keeps instead of estimating each
message; these tests hold them to the plain search on pi's golden cases and on
generated sessions (short and long, so the block sums are crossed at every offset).
"""

from __future__ import annotations

import random

import pytest

from sessions_app.core.compaction import CompactionSettings, find_cut_point, prepare_compaction
from sessions_app.core.tokens import entry_token_estimate, estimate_tokens
from tests.conformance._cases import golden_params, require_case
from tests.conformance.golden import load_golden
from tests.support.context_entries import random_path

CUTPOINT = "cutpoint.json"

KEEPS = [-5, 0, 1, 10, 50, 200, 1000, 5000, 20_000, 10**9, float("inf"), float("nan")]


def _estimates(entries):
    return [entry_token_estimate(e) for e in entries]


def _golden_entries(case):
    return load_golden(CUTPOINT)["entrySets"][case["input"]["entriesRef"]]


def test_entry_token_estimate_is_pi_estimate_of_message_entries_only():
    path = random_path(random.Random(7), 300)
    for e in path:
        if e["type"] == "message":
            assert entry_token_estimate(e) == estimate_tokens(e["message"])
        else:
            assert entry_token_estimate(e) == 0
    # A custom_message has content pi could estimate, yet the cut-point walk skips it.
    custom = next(e for e in path if e["type"] == "custom_message" and e["content"])
    assert estimate_tokens({"role": "custom", "content": custom["content"]}) > 0


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
