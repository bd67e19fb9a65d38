"""Costs (sessions_app.core.costs) as pi's calculateCost computes them: hand-worked
figures, tiers, the 1h cache write, and the same numbers as pi-ai itself for a spread of
catalog models and usages."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from sessions_app.core.costs import calculate_cost, combine_usage, price_per_million
from tests.support.node import node_binary
from tests.support.pi_costs import pi_priced

ROOT = Path(__file__).resolve().parents[2]
# pi 1.6.0's pi-ai: its calculateCost has the price tiers (pi 0.80.2's catalog has none).
PI_AI = (
    ROOT
    / "bench"
    / "pi_reference"
    / "node_modules"
    / "pi-1.6.0"
    / "node_modules"
    / "@earendil-works"
    / "pi-ai"
)
CATALOG = ROOT / "sessions_app" / "data" / "pi_models.json"

TIERED = {
    "cost": {
        "input": 2.5,
        "output": 15,
        "cacheRead": 0.25,
        "cacheWrite": 0,
        "tiers": [
            {
                "inputTokensAbove": 272000,
                "input": 5,
                "output": 22.5,
                "cacheRead": 0.5,
                "cacheWrite": 0,
            },
            {
                "inputTokensAbove": 100000,
                "input": 3,
                "output": 18,
                "cacheRead": 0.3,
                "cacheWrite": 0,
            },
        ],
    }
}


def usage(**kw):
    base = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    base.update(kw)
    return base


def test_base_prices_per_million():
    model = {"cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}
    u = usage(input=1000, output=2000, cacheRead=10_000, cacheWrite=4000)
    cost = calculate_cost(model, u)
    assert cost["input"] == pytest.approx(0.003)
    assert cost["output"] == pytest.approx(0.03)
    assert cost["cacheRead"] == pytest.approx(0.003)
    assert cost["cacheWrite"] == pytest.approx(0.015)
    assert cost["total"] == pytest.approx(0.051)
    assert u["cost"] is cost


def test_tier_by_prompt_size_including_cache():
    # 200k prompt (input + cache) is above 100k, not above 272k: the 100k tier.
    u = usage(input=50_000, cacheRead=150_000, output=1000)
    cost = calculate_cost(TIERED, u)
    assert cost["input"] == pytest.approx(3 * 0.05)
    assert cost["output"] == pytest.approx(18 * 0.001)
    assert cost["cacheRead"] == pytest.approx(0.3 * 0.15)
    # Above 272k: the highest threshold exceeded wins whatever the order of the tiers.
    cost = calculate_cost(TIERED, usage(input=300_000, output=1000))
    assert cost["input"] == pytest.approx(5 * 0.3)
    assert cost["output"] == pytest.approx(22.5 * 0.001)
    # Exactly at a threshold is not above it.
    cost = calculate_cost(TIERED, usage(input=100_000))
    assert cost["input"] == pytest.approx(2.5 * 0.1)


def test_one_hour_cache_writes_cost_twice_the_input_price():
    model = {"cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}
    cost = calculate_cost(model, usage(cacheWrite=10_000, cacheWrite1h=4000))
    assert cost["cacheWrite"] == pytest.approx((3.75 * 6000 + 3 * 2 * 4000) / 1e6)


def test_missing_numbers_count_zero():
    cost = calculate_cost({"cost": {}}, {"input": None, "output": "x"})
    assert cost == {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    assert price_per_million({"cost": {"input": 1.5, "output": 7}}) == (1.5, 7)


_NODE = r"""
const { calculateCost } = await import(process.argv[1] + "/dist/models.js");
const cases = JSON.parse(process.argv[2]);
const out = cases.map(([model, usage]) => calculateCost(model, { ...usage, cost: {} }));
process.stdout.write(JSON.stringify(out));
"""


def test_same_figures_as_pi_ai():
    if not PI_AI.exists():
        if os.environ.get("PIWEB_REQUIRE_PI") == "1":
            pytest.fail("PIWEB_REQUIRE_PI=1 but bench/pi_reference is not installed")
        pytest.skip("bench/pi_reference is not installed (make pi-reference)")
    data = json.loads(CATALOG.read_text())
    models = [m for p in data["providers"].values() for m in p["models"]]
    picked = [{"id": "tiered", **TIERED}] + [m for m in models if m["provider"] == "anthropic"][:3]
    usages = [
        usage(input=1200, output=350, cacheRead=90_000, cacheWrite=2000),
        usage(input=280_000, output=4000, cacheRead=5000, cacheWrite=0),
        usage(input=10, output=10, cacheRead=0, cacheWrite=50_000, cacheWrite1h=20_000),
    ]
    cases = [[m, u] for m in picked for u in usages]
    out = subprocess.run(
        [node_binary(), "--input-type=module", "-e", _NODE, str(PI_AI), json.dumps(cases)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    theirs = json.loads(out)
    for (model, u), expected in zip(cases, theirs, strict=True):
        ours = calculate_cost(model, dict(u))
        for key in ("input", "output", "cacheRead", "cacheWrite", "total"):
            assert ours[key] == pytest.approx(expected[key], rel=1e-12, abs=1e-15), (
                model["id"],
                u,
                key,
            )


def test_two_usages_combine_as_pis_combine_usage():
    model = {"cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}
    history = usage(input=1200, output=300, cacheRead=400, totalTokens=1900)
    prefix = usage(input=800, output=120, cacheWrite=60, cacheWrite1h=20, totalTokens=980)
    theirs = pi_priced(model, [history, prefix])
    for u in (history, prefix):
        calculate_cost(model, u)
    ours = combine_usage(history, prefix)
    expected = theirs["combined"]
    assert set(ours) == set(expected) and set(ours["cost"]) == set(expected["cost"])
    for key in ("input", "output", "cacheRead", "cacheWrite", "cacheWrite1h", "totalTokens"):
        assert ours[key] == expected[key], key
    assert "reasoning" not in ours  # neither side had it
    for key in ("input", "output", "cacheRead", "cacheWrite", "total"):
        assert ours["cost"][key] == pytest.approx(expected["cost"][key], rel=1e-12), key
    assert ours["cost"]["totalFromProvider"] is expected["cost"]["totalFromProvider"] is False
    assert ours["input"] == 2000 and isinstance(ours["input"], int)
