"""The session files pi 1.6.0 wrote, with pi's own contexts at listed nodes (issue 13).

The folder comes from ``PIWEB_PI16_SESSIONS_DIR`` or defaults to
``shared/sessions-pi-1.6.0`` beside the checkout (or beside its worktree folder).  A
missing folder fails the test that asks for it (never a skip).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import pytest

from sessions_app.core.jsonl import parse_session_entries

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIRS = [base / "shared" / "sessions-pi-1.6.0" for base in REPO_ROOT.parents[:2]]


def sessions_dir() -> Path:
    configured = os.environ.get("PIWEB_PI16_SESSIONS_DIR")
    candidates = [Path(configured).expanduser()] if configured else DEFAULT_DIRS
    for path in candidates:
        if (path / "expected.json").is_file():
            return path
    pytest.fail(
        f"pi 1.6.0 session folder not found in {candidates}; set PIWEB_PI16_SESSIONS_DIR",
        pytrace=False,
    )


def usage_cases() -> list[dict]:
    """pi 1.6.0's own usage figures for each file (``expected.json``)."""
    document = json.loads((sessions_dir() / "expected.json").read_text(encoding="utf-8"))
    assert document["usage_pi_version"] == "1.6.0"
    return document["sessions"]


def assert_same_breakdown(ours, theirs):
    assert [row["key"] for row in ours] == [row["key"] for row in theirs]
    for mine, pis in zip(ours, theirs, strict=True):
        assert mine["tokens"] == pis["tokens"], mine["key"]
        assert abs(mine["cost"] - pis["cost"]) <= 1e-9, mine["key"]


@functools.cache
def _expected(folder: str) -> dict[str, Any]:
    with open(Path(folder) / "expected.json", encoding="utf-8") as fh:
        return json.load(fh)


def expected_sessions() -> list[dict[str, Any]]:
    """expected.json's sessions: file, leafId and ``contexts`` ([{leafId, context}])."""
    return _expected(str(sessions_dir()))["sessions"]


def session_names() -> list[str]:
    """File names for parametrizing (a missing folder gives one failing parameter)."""
    try:
        return [s["file"] for s in expected_sessions()]
    except BaseException:  # pytest.fail raises a BaseException subclass
        return ["<missing>"]


def session(name: str) -> tuple[bytes, list[dict[str, Any]], dict[str, Any]]:
    """(file bytes, entries without the header, expected record) of one file."""
    record = next((s for s in expected_sessions() if s["file"] == name), None)
    if record is None:
        pytest.fail(f"no expected contexts for {name}", pytrace=False)
    data = (sessions_dir() / name).read_bytes()
    entries = [e for e in parse_session_entries(data.decode("utf-8")) if e.get("type") != "session"]
    return data, entries, record
