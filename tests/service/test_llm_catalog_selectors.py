"""selectors/llm/catalog.py with a real pi agent folder on disk: models.json's models and
headers, its edits seen without a restart, and a run's cost priced from the catalog."""

import json

import pytest

from sessions_app.selectors.llm.catalog import (
    find_model,
)
from sessions_app.selectors.llm.resolution import available_models, resolve_model
from sessions_app.services import chat, jobs, sessions
from tests.support.pi_agent_dir import empty_agent_dir, write
from tests.support.scripted_llm import text

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def agent(tmp_path, settings, monkeypatch):
    return empty_agent_dir(tmp_path, settings, monkeypatch)


def test_models_json_custom_models_headers_and_edits_without_restart(agent, make_user, monkeypatch):
    user = make_user()
    monkeypatch.setenv("PROXY_KEY", "proxy-secret")
    assert find_model("ollama", "llama3.1:8b") is None
    write(
        agent / "models.json",
        {
            "providers": {
                "ollama": {
                    "baseUrl": "http://127.0.0.1:11434/v1",
                    "api": "openai-completions",
                    "apiKey": "ollama",
                    "models": [{"id": "llama3.1:8b", "contextWindow": 32768}],
                },
                "proxy": {
                    "baseUrl": "https://proxy.example/v1",
                    "api": "anthropic-messages",
                    "apiKey": "$PROXY_KEY",
                    "authHeader": True,
                    "headers": {"x-team": "piweb"},
                    "models": [{"id": "claude-x", "headers": {"x-model": "m"}}],
                },
            }
        },
    )
    resolved = resolve_model(user, "ollama", "llama3.1:8b")
    assert resolved.model["baseUrl"] == "http://127.0.0.1:11434/v1"
    assert resolved.context_window == 32768 and resolved.key_source == "models.json"
    proxy = resolve_model(user, "proxy", "claude-x")
    assert proxy.headers == {
        "x-team": "piweb",
        "x-model": "m",
        "Authorization": "Bearer proxy-secret",
    }
    assert "proxy-secret" not in repr(proxy)
    refs = {c.ref for c in available_models(user)}
    assert {"ollama/llama3.1:8b", "proxy/claude-x"} <= refs

    write(
        agent / "models.json",
        {
            "providers": {
                "ollama": {
                    "baseUrl": "http://127.0.0.1:11434/v1",
                    "api": "openai-completions",
                    "apiKey": "ollama",
                    "models": [{"id": "llama3.1:8b", "contextWindow": 65536}],
                }
            }
        },
    )
    assert resolve_model(user, "ollama", "llama3.1:8b").context_window == 65536
    assert find_model("proxy", "claude-x") is None


@pytest.mark.usefixtures("tasks_stay_in_process")
def test_a_run_records_its_cost_and_key_source(
    agent, make_user, workspace, llm, redis_ready, settings
):
    """A run of an environment model with a price: its assistant message carries the cost
    pi's calculateCost gives, and the session's usage totals count it."""
    profiles = json.loads(settings.PIWEB_MODEL_PROFILES_JSON)
    profiles["priced"] = {
        **profiles["scripted"],
        "model": "priced-model",
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
    }
    settings.PIWEB_MODEL_PROFILES_JSON = json.dumps(profiles)
    user = make_user()
    from tests.support.workspaces import place_workspace

    place_workspace(user, workspace)
    session = sessions.create_session(owner=user, cwd=str(workspace), model_profile="priced")
    llm.push(
        text(
            "Done.",
            usage={"prompt_tokens": 100_000, "completion_tokens": 2000, "total_tokens": 102_000},
        )
    )
    job = chat.send_message(session, user, "hello")
    assert job.params["key_source"] == "env"
    assert job.model == "openai-compatible/priced-model"
    assert jobs.run_job(str(job.pk)) == "done"
    session.refresh_from_db()
    reply = session.entries.order_by("-seq").first().payload["message"]
    assert reply["role"] == "assistant"
    assert reply["usage"]["cost"]["total"] == pytest.approx(0.3 + 0.03)
    assert session.usage_cost == pytest.approx(0.33)
