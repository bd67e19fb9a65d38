"""Locating and loading pi's golden vectors (SPEC section 9).

The folder comes from the ``PIWEB_GOLDEN_DIR`` environment variable, or
defaults to ``<repo root>/../shared/golden-0.80.2`` (pi 0.80.2's vectors; the older
``golden`` folder of pi 0.73.1 is no longer read).  A missing folder or file is a
test failure with a clear message, never a skip: conformance must not pass
silently because its data went missing.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_GOLDEN_DIR = REPO_ROOT.parent / "shared" / "golden-0.80.2"


def golden_dir() -> Path:
    """The golden vector folder; fails the calling test when it is missing."""
    configured = os.environ.get("PIWEB_GOLDEN_DIR")
    path = Path(configured).expanduser() if configured else DEFAULT_GOLDEN_DIR
    if not path.is_dir():
        source = "PIWEB_GOLDEN_DIR" if configured else "default location"
        pytest.fail(
            f"golden vector folder not found: {path} ({source}); "
            "set PIWEB_GOLDEN_DIR to the folder holding pi's golden *.json files",
            pytrace=False,
        )
    return path


@functools.cache
def _load(path: str) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def load_golden(name: str) -> dict[str, Any]:
    """Parsed ``<golden_dir>/<name>`` (``.json`` added when missing).

    The parsed document is cached per path; treat it as read-only.
    """
    if not name.endswith(".json"):
        name += ".json"
    path = golden_dir() / name
    if not path.is_file():
        pytest.fail(f"golden vector file not found: {path}", pytrace=False)
    return _load(str(path))
