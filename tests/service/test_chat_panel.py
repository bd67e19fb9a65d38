"""selectors/panels/chat.py: the chat header's model picker. With pi's settings.json naming
`enabledModels`, the models pi cycles through come first, in a group of their own; every
other model the user can call stays pickable, by provider, as in pi's /model."""

import json

import pytest

from sessions_app.selectors.panels.chat import SCOPED_GROUP, model_context
from sessions_app.services import sessions

pytestmark = pytest.mark.django_db

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture
def agent(tmp_path, settings, monkeypatch):
    folder = tmp_path / "agent"
    folder.mkdir()
    settings.PIWEB_PI_AGENT_DIR = str(folder)
    for name in KEYS:
        monkeypatch.setenv(name, f"env-{name.lower()}")
    return folder


def picker(agent, make_user, workspace, enabled=None):
    if enabled is not None:
        (agent / "settings.json").write_text(json.dumps({"enabledModels": enabled}))
    user = make_user(is_staff=True)  # the server's environment keys serve staff
    session = sessions.create_session(owner=user, cwd=str(workspace))
    return model_context(session, user)["groups"]


def test_without_enabled_models_the_picker_is_grouped_by_provider(agent, make_user, workspace):
    groups = picker(agent, make_user, workspace)
    labels = [label for label, _ in groups]
    assert SCOPED_GROUP not in labels and labels == sorted(labels)
    assert {"openai", "anthropic"} <= set(labels)


def test_enabled_models_come_first_and_the_rest_stay_pickable(agent, make_user, workspace):
    everything = {c.ref for _, group in picker(agent, make_user, workspace) for c in group}
    groups = picker(agent, make_user, workspace, ["openai/gpt-4o", "claude-sonnet-4-5*:high"])
    label, scoped = groups[0]
    refs = [c.ref for c in scoped]
    assert label == SCOPED_GROUP and "openai/gpt-4o" in refs
    assert refs and all(
        r == "openai/gpt-4o" or r.startswith("anthropic/claude-sonnet-4-5") for r in refs
    )
    rest = [c.ref for _, group in groups[1:] for c in group]
    assert not set(refs) & set(rest)
    assert set(refs) | set(rest) == everything  # nothing disappears from the picker


def test_a_scope_that_matches_nothing_leaves_the_picker_as_it_was(agent, make_user, workspace):
    groups = picker(agent, make_user, workspace, ["nobody/none"])
    assert SCOPED_GROUP not in [label for label, _ in groups]
