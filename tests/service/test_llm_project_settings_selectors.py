"""A project's own `.pi/settings.json` (selectors/llm/project_settings.py): merged over the
agent folder's as pi 0.80.2's settings manager merges them (checked against pi itself),
deciding the default model and thinking level of a session working there, only in a
workspace that is the user's own, and only read through safefs beneath it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.selectors.llm.project_settings import project_settings, read_project_settings
from sessions_app.selectors.model_input import model_input
from sessions_app.services import sessions
from tests.support.node import node_binary
from tests.support.pi_reference import PACKAGES

pytestmark = pytest.mark.django_db

SETTINGS_MANAGER = PACKAGES / "pi-0.80.2" / "dist" / "core" / "settings-manager.js"
AGENT = {
    "defaultProvider": "openai-compatible",
    "defaultModel": "scripted-model",
    "defaultThinkingLevel": "low",
    "compaction": {"enabled": False, "keepRecentTokens": 999},
}
# Sets the model alone: the provider stays the agent folder's, as pi merges key by key.
PROJECT = {
    "defaultModel": "scripted-vision-model",
    "defaultThinkingLevel": "high",
    "compaction": {"reserveTokens": 5000},
}


@pytest.fixture
def owner(make_user):
    return make_user()


@pytest.fixture
def agent_dir(settings, tmp_path):
    agent = tmp_path / "pi-agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps(AGENT))
    settings.PIWEB_PI_AGENT_DIR = str(agent)
    return agent


def write_project(folder: Path, data) -> Path:
    (folder / ".pi").mkdir(parents=True, exist_ok=True)
    path = folder / ".pi" / "settings.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def defaults(session, user) -> tuple[str, str]:
    seen = model_input(session)
    resolved = seen.resolved(user)
    return f"{resolved.provider}/{resolved.model_id}", seen.thinking_level(user)


_PI = r"""
const { SettingsManager } = await import(process.argv[1]);
const m = SettingsManager.create(process.argv[2], process.argv[3]);
process.stdout.write(JSON.stringify({
  provider: m.getDefaultProvider() ?? null,
  model: m.getDefaultModel() ?? null,
  thinking: m.getDefaultThinkingLevel() ?? null,
  compaction: m.getCompactionSettings(),
}));
"""


def pis_view(cwd: Path, agent: Path) -> dict:
    if not SETTINGS_MANAGER.exists():
        pytest.skip("bench/pi_reference is not installed (make pi-reference)")
    out = subprocess.run(
        [node_binary(), "--input-type=module", "-e", _PI, str(SETTINGS_MANAGER), cwd, agent],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def test_the_projects_settings_merge_over_the_agent_folders_as_pi_merges_them(
    owner, workspace, agent_dir
):
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    assert defaults(session, owner) == ("openai-compatible/scripted-model", "low")
    write_project(workspace, PROJECT)
    theirs = pis_view(workspace, agent_dir)
    ours = project_settings(session, owner)
    assert ours is not None and ours.keys == set(PROJECT)
    merged = ours.merged
    assert (merged.default_provider, merged.default_model, merged.default_thinking_level) == (
        theirs["provider"],
        theirs["model"],
        theirs["thinking"],
    )
    assert merged.compaction == {
        key: theirs["compaction"][key] for key in ("enabled", "reserveTokens", "keepRecentTokens")
    }
    assert defaults(session, owner) == ("openai-compatible/scripted-vision-model", "high")
    # A level the path records still wins over any default, as in pi.
    sessions.append_entry(session, {"type": "thinking_level_change", "thinkingLevel": "minimal"})
    session.refresh_from_db()
    assert model_input(session).thinking_level(owner) == "minimal"


def test_only_a_workspace_the_user_owns_and_never_a_refused_folder(
    owner, make_user, workspace, agent_dir, tmp_path
):
    write_project(workspace, PROJECT)
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    editor = make_user()  # a team editor, say: the folder is not theirs
    assert project_settings(session, editor) is None
    assert defaults(session, editor) == ("openai-compatible/scripted-model", "low")
    # A session whose folder lies outside the owner's area (imported from elsewhere).
    elsewhere = tmp_path / "imported"
    write_project(elsewhere, PROJECT)
    Session.objects.filter(pk=session.pk).update(cwd=str(elsewhere))
    session.refresh_from_db()
    assert project_settings(session, owner) is None
    assert defaults(session, owner) == ("openai-compatible/scripted-model", "low")


def test_a_settings_file_or_folder_linked_outside_the_workspace_is_not_read(
    owner, workspace, agent_dir, tmp_path
):
    outside = tmp_path / "elsewhere"
    target = write_project(outside, PROJECT)
    (workspace / ".pi").mkdir()
    (workspace / ".pi" / "settings.json").symlink_to(target)
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    assert read_project_settings(str(workspace)) is None
    assert defaults(session, owner) == ("openai-compatible/scripted-model", "low")
    (workspace / ".pi" / "settings.json").unlink()
    (workspace / ".pi").rmdir()
    (workspace / ".pi").symlink_to(outside / ".pi")
    assert project_settings(session, owner) is None
    # A link that stays inside the workspace is followed, as safefs allows.
    (workspace / ".pi").unlink()
    write_project(workspace / "shared", PROJECT)
    (workspace / ".pi").symlink_to(workspace / "shared" / ".pi")
    assert project_settings(session, owner).merged.default_model == "scripted-vision-model"


def test_a_file_that_is_no_json_object_counts_as_none(owner, workspace, agent_dir):
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    for text in ("{not json", "[1, 2]", ""):
        write_project(workspace, text)
        assert project_settings(session, owner) is None
        assert defaults(session, owner) == ("openai-compatible/scripted-model", "low")
