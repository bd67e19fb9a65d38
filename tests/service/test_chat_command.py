"""manage.py chat, run as a user runs it (call_command, the real scripted model server, real
Redis, the run executed in this process)."""

import pytest
from django.core.management.base import CommandError

from sessions_app.selectors import paths
from sessions_app.services import sessions
from tests.support.commands import empty_agent_dir, run
from tests.support.scripted_llm import Reply, error, text
from tests.support.workspaces import place_workspace

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tasks_stay_in_process"),
]


@pytest.fixture
def agent(tmp_path, settings, monkeypatch):
    return empty_agent_dir(tmp_path, settings, monkeypatch)


def test_chat_runs_one_turn_and_prints_the_reply(make_user, workspace, llm):
    owner = make_user()
    place_workspace(owner, workspace)
    session = sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")
    llm.push(text("First answer."))
    assert run("chat", session.pi_id, "hello") == "First answer.\n"
    session.refresh_from_db()
    first_leaf = session.leaf_pi_id
    llm.push(text("Second answer."))
    assert run("chat", session.pi_id, "again") == "Second answer.\n"
    # --leaf continues from an earlier entry: a new branch.
    llm.push(text("Branch answer."))
    assert run("chat", session.pi_id, "other way", "--leaf", first_leaf) == "Branch answer.\n"
    session.refresh_from_db()
    path = paths.load_path(session)
    assert [e.get("message", {}).get("role") for e in path if e["type"] == "message"] == [
        "user", "assistant", "user", "assistant",
    ]  # fmt: skip
    assert llm.requests[-1]["messages"][-1]["content"] in (
        "other way",
        [{"type": "text", "text": "other way"}],
    )


def test_chat_records_model_and_thinking_changes(make_user, workspace, llm):
    owner = make_user()
    place_workspace(owner, workspace)
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    llm.push(Reply(text="Thought about it."))
    out = run("chat", session.pi_id, "hi", "--model", "scripted-fast", "--thinking", "high")
    assert out == "Thought about it.\n"
    session.refresh_from_db()
    types = [
        (e["type"], e.get("provider"), e.get("modelId"), e.get("thinkingLevel"))
        for e in paths.load_path(session)
    ]
    assert types[0] == ("model_change", "openai-compatible", "scripted-fast-model", None)
    # The environment model is not a reasoning model: pi clamps the level to "off".
    assert types[1] == ("thinking_level_change", None, None, "off")
    assert llm.requests[-1]["model"] == "scripted-fast-model"


def test_chat_fails_with_a_non_zero_exit(make_user, workspace, llm, agent, settings):
    settings.PIWEB_LLM_RETRIES = 0
    owner = make_user()
    place_workspace(owner, workspace)
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    with pytest.raises(CommandError, match="Unknown model"):
        run("chat", session.pi_id, "hi", "--model", "nope/nothing")
    with pytest.raises(CommandError, match="No API key for anthropic"):
        run("chat", session.pi_id, "hi", "--model", "anthropic/claude-haiku-4-5")
    stranger = make_user()
    with pytest.raises(CommandError, match="may not write"):
        run("chat", session.pi_id, "hi", "--user", stranger.username)
    with pytest.raises(CommandError, match="No session"):
        run("chat", "no-such-session", "hi")
    # A model call that fails: the reply names the error and the exit is non-zero.
    llm.push(error(400, "the scripted model refuses"))
    with pytest.raises(CommandError):
        run("chat", session.pi_id, "hi", "--model", "scripted")
