"""selectors/llm/windows.py: the window of the model a leaf records (an imported session
keeps its own), and the compaction settings from piweb's defaults, pi's settings.json
and the session."""

import pytest

from sessions_app.selectors.llm.catalog import (
    default_model_ref,
    default_thinking_level,
    find_model,
)
from sessions_app.selectors.llm.resolution import resolve_model
from sessions_app.selectors.llm.windows import branch_summary_reserve, compaction_settings
from sessions_app.selectors.model_input import model_input
from sessions_app.services import sessions
from tests.support.pi_agent_dir import empty_agent_dir, write

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def agent(tmp_path, settings, monkeypatch):
    return empty_agent_dir(tmp_path, settings, monkeypatch)


def test_settings_json_defaults_and_compaction(agent, make_user, workspace, monkeypatch):
    user = make_user()
    monkeypatch.setenv("OPENAI_API_KEY", "env-openai")
    write(
        agent / "settings.json",
        {
            "defaultProvider": "openai",
            "defaultModel": "gpt-4o",
            "defaultThinkingLevel": "high",
            "compaction": {"reserveTokens": 9000, "keepRecentTokens": 7000},
            "branchSummary": {"reserveTokens": 5000},
        },
    )
    assert default_model_ref(user) == ("openai", "gpt-4o")
    assert default_thinking_level(user) == "high"
    assert resolve_model(user).model_id == "gpt-4o"
    session = sessions.create_session(owner=user, cwd=str(workspace))
    cfg = compaction_settings(session)
    assert (cfg.reserve_tokens, cfg.keep_recent_tokens, cfg.enabled) == (9000, 7000, True)
    assert branch_summary_reserve(16384) == 5000
    # A session's own settings still win.
    session.settings = {"compaction": {"reserveTokens": 1234}}
    session.save(update_fields=["settings"])
    assert compaction_settings(session).reserve_tokens == 1234


def test_imported_session_uses_the_window_of_its_recorded_model(agent, make_user, workspace):
    user = make_user()
    session = sessions.create_session(owner=user, cwd=str(workspace), model_profile="scripted")
    # Before any model is recorded: the session's profile window.
    assert model_input(session).window == 128000
    sessions.append_entry(
        session,
        {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}},
    )
    sessions.append_entry(
        session,
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "hello"}],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-opus-4-1",
                "usage": {
                    "input": 1,
                    "output": 1,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 2,
                },
                "stopReason": "stop",
                "timestamp": 2,
            },
        },
    )
    session.refresh_from_db()
    assert model_input(session).window == 200000
    sessions.append_entry(
        session, {"type": "model_change", "provider": "openai", "modelId": "gpt-4.1"}
    )
    session.refresh_from_db()
    assert model_input(session).window == find_model("openai", "gpt-4.1")["contextWindow"]
    from sessions_app.selectors.panels.context_chart import context_chart

    chart = context_chart(session)
    assert [p["window"] for p in chart["points"]] == [200000]
