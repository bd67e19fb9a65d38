"""pi's agent folder on disk for the model selectors' tests: an empty folder piweb reads,
and JSON files written into it the way an editor saves them."""

import json
import os
import time
from pathlib import Path

PROVIDER_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
)


def empty_agent_dir(tmp_path: Path, settings, monkeypatch) -> Path:
    """An empty pi agent folder used by piweb; provider variables cleared."""
    folder = tmp_path / "agent"
    folder.mkdir()
    settings.PIWEB_PI_AGENT_DIR = str(folder)
    for name in PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)
    return folder


def write(path: Path, data) -> None:
    """Write a JSON file with a newer mtime than before (as an editor would)."""
    old = path.stat().st_mtime if path.exists() else 0
    path.write_text(json.dumps(data))
    stamp = max(time.time(), old + 1)
    os.utime(path, (stamp, stamp))
