"""pi's own pricing, run through Node: pi 0.80.2's calculateCost (pi-ai) and pi 1.6.0's
combineUsage (0.80.2 has none: it does not keep a summary's usage), for tests that check
our figures against pi's."""

import json
import os
import subprocess

import pytest

from tests.support.node import node_binary
from tests.support.pi_reference import PACKAGES as MODULES

PI_AI = MODULES / "pi-0.80.2" / "node_modules" / "@earendil-works" / "pi-ai" / "dist" / "models.js"
USAGE_TOTALS = MODULES / "pi-1.6.0" / "dist" / "core" / "usage-totals.js"

_SCRIPT = r"""
const { calculateCost } = await import(process.argv[1]);
const { combineUsage } = await import(process.argv[2]);
const [model, usages] = JSON.parse(process.argv[3]);
const priced = usages.map((u) => ({ ...u, cost: calculateCost(model, { ...u, cost: {} }) }));
const combined = priced.reduce((a, b) => combineUsage(a, b));
process.stdout.write(JSON.stringify({ priced, combined }));
"""


def pi_priced(model: dict, usages: list[dict]) -> dict:
    """`{"priced": [usage with pi's cost, ...], "combined": their combineUsage}`."""
    if not (PI_AI.exists() and USAGE_TOTALS.exists()):
        if os.environ.get("PIWEB_REQUIRE_PI") == "1":
            pytest.fail("PIWEB_REQUIRE_PI=1 but bench/pi_reference is not installed")
        pytest.skip("bench/pi_reference is not installed (make pi-reference)")
    bare = [{k: v for k, v in u.items() if k != "cost"} for u in usages]
    out = subprocess.run(
        [
            node_binary(),
            "--input-type=module",
            "-e",
            _SCRIPT,
            str(PI_AI),
            str(USAGE_TOTALS),
            json.dumps([model, bare]),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)
