"""The model catalog file is what bin/generate-model-catalog writes from the pinned pi."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PI_AI = (
    ROOT
    / "bench"
    / "pi_reference"
    / "node_modules"
    / "pi-0.80.2"
    / "node_modules"
    / "@earendil-works"
    / "pi-ai"
)
CATALOG = ROOT / "sessions_app" / "data" / "pi_models.json"


def test_regenerating_gives_the_committed_file(tmp_path):
    if not PI_AI.exists():
        if os.environ.get("PIWEB_REQUIRE_PI") == "1":
            pytest.fail("PIWEB_REQUIRE_PI=1 but bench/pi_reference is not installed")
        pytest.skip("bench/pi_reference is not installed (make pi-reference)")
    out = tmp_path / "pi_models.json"
    subprocess.run(
        [sys.executable, str(ROOT / "bin" / "generate-model-catalog"), "--output", str(out)],
        check=True,
        capture_output=True,
    )
    assert out.read_bytes() == CATALOG.read_bytes()
    check = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "generate-model-catalog"), "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr


def test_catalog_holds_pi_facts():
    data = json.loads(CATALOG.read_text())
    providers = data["providers"]
    assert data["source"] == "@earendil-works/pi-ai 0.80.2"  # pi 0.80.2's own
    assert providers["anthropic"]["envKeys"] == ["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"]
    assert providers["openai"]["envKeys"] == ["OPENAI_API_KEY"]
    assert providers["google"]["envKeys"] == ["GEMINI_API_KEY"]
    assert providers["openrouter"]["envKeys"] == ["OPENROUTER_API_KEY"]
    haiku = next(m for m in providers["anthropic"]["models"] if m["id"] == "claude-haiku-4-5")
    assert haiku["api"] == "anthropic-messages"
    assert haiku["contextWindow"] == 200000
    assert haiku["cost"]["input"] == 1 and haiku["cost"]["output"] == 5
    apis = {m["api"] for p in providers.values() for m in p["models"]}
    assert {"openai-completions", "openai-responses", "anthropic-messages"} <= apis
    assert "google-generative-ai" in apis
