"""selectors/llm with a real pi agent folder on disk: key resolution order (the user's own
key, auth.json, models.json, the environment), $VAR and !command values, OAuth entries
through `pi auth print-api-key`, file changes without a restart, windows from the
recorded model, costs on a real run, and no plaintext key in a database dump."""

import json
import os
import stat
import time

import pytest

from sessions_app.selectors import llm, paths
from sessions_app.selectors.llm import compaction_settings
from sessions_app.selectors.model_input import model_input
from sessions_app.services import chat, jobs, provider_keys, sessions, summarizer
from tests.support.scripted_llm import error, text

pytestmark = pytest.mark.django_db(transaction=True)

PROVIDER_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
)


@pytest.fixture
def agent(tmp_path, settings, monkeypatch):
    """An empty pi agent folder used by piweb; provider variables cleared."""
    folder = tmp_path / "agent"
    folder.mkdir()
    settings.PIWEB_PI_AGENT_DIR = str(folder)
    for name in PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)
    return folder


def write(path, data):
    """Write a JSON file with a newer mtime than before (as an editor would)."""
    old = path.stat().st_mtime if path.exists() else 0
    path.write_text(json.dumps(data))
    stamp = max(time.time(), old + 1)
    os.utime(path, (stamp, stamp))


def key_of(user, provider="anthropic", model="claude-haiku-4-5"):
    resolved = llm.resolve_model(user, provider, model)
    return resolved.api_key, resolved.key_source


def test_key_resolution_order(agent, make_user, monkeypatch):
    user = make_user()
    with pytest.raises(llm.ModelUnavailable, match="No API key for anthropic"):
        key_of(user)
    assert llm.key_status(user, "anthropic").source == "none"

    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    assert key_of(user) == ("from-env", "env")
    assert llm.key_status(user, "anthropic").label == "server environment (ANTHROPIC_API_KEY)"
    # pi reads ANTHROPIC_OAUTH_TOKEN before ANTHROPIC_API_KEY.
    monkeypatch.setenv("ANTHROPIC_OAUTH_TOKEN", "from-oauth-env")
    assert key_of(user) == ("from-oauth-env", "env")

    # pi refuses a provider entry with only an apiKey (it needs baseUrl, headers, compat,
    # modelOverrides or models): the file is then ignored, with an error.
    write(agent / "models.json", {"providers": {"anthropic": {"apiKey": "from-models-json"}}})
    assert key_of(user) == ("from-oauth-env", "env")
    assert "must specify" in llm.catalog().error
    write(
        agent / "models.json",
        {
            "providers": {
                "anthropic": {"apiKey": "from-models-json", "baseUrl": "https://api.anthropic.com"}
            }
        },
    )
    assert key_of(user) == ("from-models-json", "models.json")

    write(agent / "auth.json", {"anthropic": {"type": "api_key", "key": "from-auth-json"}})
    assert key_of(user) == ("from-auth-json", "pi-auth")

    provider_keys.set_key(user, "anthropic", "sk-ant-own-key-0001")
    assert key_of(user) == ("sk-ant-own-key-0001", "user-key")
    # Another user still gets the server's key.
    assert key_of(make_user()) == ("from-auth-json", "pi-auth")
    provider_keys.remove_key(user, "anthropic")
    assert key_of(user) == ("from-auth-json", "pi-auth")


def test_auth_json_values_variables_and_commands(agent, make_user, monkeypatch):
    user = make_user()
    monkeypatch.setenv("MY_ANTHROPIC", "via-variable")
    write(agent / "auth.json", {"anthropic": {"type": "api_key", "key": "${MY_ANTHROPIC}"}})
    assert key_of(user) == ("via-variable", "pi-auth")
    write(agent / "auth.json", {"anthropic": {"type": "api_key", "key": "!echo via-command"}})
    assert key_of(user) == ("via-command", "pi-auth")
    write(agent / "auth.json", {"anthropic": {"type": "api_key", "key": "literal-key"}})
    assert key_of(user) == ("literal-key", "pi-auth")


def test_models_json_unresolved_key_names_the_variable_not_a_value(agent, make_user):
    write(
        agent / "models.json",
        {
            "providers": {
                "anthropic": {"apiKey": "$NOT_SET_ANYWHERE", "baseUrl": "https://x.example"}
            }
        },
    )
    with pytest.raises(llm.ModelUnavailable) as caught:
        key_of(make_user())
    assert "NOT_SET_ANYWHERE" in str(caught.value)


def test_oauth_without_pi_is_unavailable_with_reason(agent, make_user, monkeypatch, tmp_path):
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}:/usr/bin:/bin")
    write(
        agent / "auth.json",
        {"anthropic": {"type": "oauth", "access": "a", "refresh": "r", "expires": 1}},
    )
    status = llm.key_status(make_user(), "anthropic")
    assert status.source == "none" and "pi auth print-api-key" in status.detail
    with pytest.raises(llm.ModelUnavailable, match="OAuth"):
        key_of(make_user())


def test_oauth_through_pi_auth_print_api_key(agent, make_user, monkeypatch, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    pi = bindir / "pi"
    pi.write_text(
        "#!/bin/sh\n"
        'if [ "$2" = "--help" ]; then echo "pi auth print-api-key [--provider <p>]"; exit 0; fi\n'
        'if [ "$2" = "print-api-key" ] && [ "$4" = "anthropic" ]; then echo "oauth-access-$PI_CODING_AGENT_DIR"; exit 0; fi\n'
        "exit 1\n"
    )
    pi.chmod(pi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    write(
        agent / "auth.json",
        {"anthropic": {"type": "oauth", "access": "a", "refresh": "r", "expires": 1}},
    )
    assert llm.key_status(make_user(), "anthropic").source == "pi-auth"
    assert key_of(make_user()) == (f"oauth-access-{agent}", "pi-auth")


def test_server_keys_for_staff_only(agent, make_user, monkeypatch, settings):
    settings.PIWEB_SERVER_KEYS = "staff"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "server-key")
    with pytest.raises(llm.ModelUnavailable, match="Models page"):
        key_of(make_user())
    assert key_of(make_user(is_staff=True)) == ("server-key", "env")
    someone = make_user()
    provider_keys.set_key(someone, "anthropic", "sk-their-own-key-1")
    assert key_of(someone) == ("sk-their-own-key-1", "user-key")


def test_models_json_custom_models_headers_and_edits_without_restart(agent, make_user, monkeypatch):
    user = make_user()
    monkeypatch.setenv("PROXY_KEY", "proxy-secret")
    assert llm.find_model("ollama", "llama3.1:8b") is None
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
    resolved = llm.resolve_model(user, "ollama", "llama3.1:8b")
    assert resolved.model["baseUrl"] == "http://127.0.0.1:11434/v1"
    assert resolved.context_window == 32768 and resolved.key_source == "models.json"
    proxy = llm.resolve_model(user, "proxy", "claude-x")
    assert proxy.headers == {
        "x-team": "piweb",
        "x-model": "m",
        "Authorization": "Bearer proxy-secret",
    }
    assert "proxy-secret" not in repr(proxy)
    refs = {c.ref for c in llm.available_models(user)}
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
    assert llm.resolve_model(user, "ollama", "llama3.1:8b").context_window == 65536
    assert llm.find_model("proxy", "claude-x") is None


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
    assert llm.default_model_ref(user) == ("openai", "gpt-4o")
    assert llm.default_thinking_level(user) == "high"
    assert llm.resolve_model(user).model_id == "gpt-4o"
    session = sessions.create_session(owner=user, cwd=str(workspace))
    cfg = compaction_settings(session)
    assert (cfg.reserve_tokens, cfg.keep_recent_tokens, cfg.enabled) == (9000, 7000, True)
    assert llm.branch_summary_reserve(16384) == 5000
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
    assert model_input(session).window == llm.find_model("openai", "gpt-4.1")["contextWindow"]
    from sessions_app.selectors.panels.context_chart import context_chart

    chart = context_chart(session)
    assert [p["window"] for p in chart["points"]] == [200000]


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


# One retry policy: the agent run and the summarizer obey the same three settings
# (PIWEB_LLM_RETRIES, PIWEB_LLM_RETRY_BASE_DELAY, PIWEB_LLM_RETRY_MAX_DELAY), against the
# scripted OpenAI-compatible server through the real openai SDK, in this process.
REQUEST = {
    "system": "Summarize.",
    "messages": [{"role": "user", "content": "hi"}],
    "max_tokens": 50,
}


@pytest.fixture
def owner(make_user):
    return make_user("retry-owner")  # (the `workspace` fixture is made in their folder)


@pytest.fixture
def session(owner, workspace, redis_ready, monkeypatch):
    """A session on the scripted model whose runs happen here: their tasks go to a queue
    no worker consumes (a worker from another module must not claim them first)."""
    from piweb.celery import app

    monkeypatch.setitem(app.conf, "task_default_queue", "q-retry-tests-unconsumed")
    return sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")


def agent_calls(session, llm_server) -> tuple[int, float]:
    before = len(llm_server.requests)
    started = time.monotonic()
    job = chat.send_message(session, session.owner, "hello")
    jobs.run_job(str(job.pk))
    session.refresh_from_db()
    return len(llm_server.requests) - before, time.monotonic() - started


def summary_calls(llm_server) -> tuple[int, float, str]:
    before = len(llm_server.requests)
    started = time.monotonic()
    try:
        summarizer.complete(llm.resolve_profile("scripted"), REQUEST)
        outcome = "ok"
    except summarizer.SummaryError as exc:
        outcome = str(exc)
    return len(llm_server.requests) - before, time.monotonic() - started, outcome


@pytest.mark.parametrize("retries", [0, 2])
def test_both_callers_obey_the_same_retry_settings(session, llm, settings, retries):
    settings.PIWEB_LLM_RETRIES = retries
    settings.PIWEB_LLM_RETRY_BASE_DELAY = 0.3
    settings.PIWEB_LLM_RETRY_MAX_DELAY = 0.4
    waits = sum(min(0.4, 0.3 * 2**n) for n in range(retries))  # 0.3 + 0.4

    llm.push(*[error(503, "overloaded")] * (retries + 2))
    calls, took = agent_calls(session, llm)
    assert calls == retries + 1 and took >= waits
    assert paths.load_path(session)[-1]["message"]["errorMessage"] == "503 overloaded"

    llm.reset()
    llm.push(*[error(503, "overloaded")] * (retries + 2))
    calls, took, outcome = summary_calls(llm)
    assert calls == retries + 1 and took >= waits
    assert "503" in outcome

    # Within the budget both get through.
    llm.reset()
    llm.push(*[error(429, "slow down")] * retries, text("fine"))
    assert agent_calls(session, llm)[0] == retries + 1
    llm.push(*[error(429, "slow down")] * retries, text("fine"))
    assert summary_calls(llm)[::2] == (retries + 1, "ok")
