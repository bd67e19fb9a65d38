"""The agent run (the job of services/jobs/agent_run.py; its runner is `agent_run.run`) on
each model API other than OpenAI chat completions (which the rest of the suite uses): a
profile with `"api"` set, the fake provider for that API speaking its SSE protocol through
its official SDK, a real tool call executed in the session's workspace, and the tool result
sent back in the API's own shape. The summarizer's requests go through the same APIs."""

import json

import pytest

from sessions_app.selectors import paths
from sessions_app.selectors.llm.catalog import resolve_profile
from sessions_app.services import chat, jobs, sessions, summarizer
from tests.support.fake_providers import Call, FakeProviders, Turn

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tasks_stay_in_process"),
]

APIS = {
    "openai-responses": ("gpt-5-test", lambda body: body["input"][-1]),
    "anthropic-messages": ("claude-test", lambda body: body["messages"][-1]["content"][-1]),
    "google-generative-ai": ("gemini-2.5-flash", lambda body: body["contents"][-1]["parts"][-1]),
}


@pytest.fixture
def owner(make_user):
    return make_user()  # (the `workspace` fixture is made in their folder)


@pytest.fixture(scope="module")
def fake():
    server = FakeProviders()
    yield server
    server.close()


@pytest.fixture
def profile(fake, settings, request):
    api = request.param
    profiles = json.loads(settings.PIWEB_MODEL_PROFILES_JSON)
    profiles[api] = {
        "api": api,
        "provider": "testprov",
        "base_url": fake.base_url(api),
        "model": APIS[api][0],
        "api_key": "sk-fake-key",
        "context_window": 200000,
        "max_output": 32000,
        "reasoning": True,
    }
    settings.PIWEB_MODEL_PROFILES_JSON = json.dumps(profiles)
    fake.reset()
    return api


@pytest.mark.parametrize("profile", list(APIS), indirect=True)
def test_an_agent_turn_with_a_tool_call(profile, fake, owner, workspace, redis_ready):
    api = profile
    (workspace / "hello.txt").write_text("hi there\n")
    session = sessions.create_session(owner=owner, cwd=str(workspace), model_profile=api)
    fake.push(
        Turn(thinking="Read it.", calls=[Call("read", {"path": "hello.txt"}, id="call_r1")]),
        Turn(text="It says hi."),
    )
    job = chat.send_message(session, owner, "read hello.txt")
    assert jobs.run_job(str(job.pk)) == "done"
    session.refresh_from_db()
    messages = [e["message"] for e in paths.load_path(session)]
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert all(
        m["api"] == api and m["provider"] == "testprov"
        for m in messages
        if m["role"] == "assistant"
    )
    assert messages[1]["content"][0]["type"] == "thinking"
    assert messages[1]["content"][0]["thinkingSignature"]  # kept as pi keeps it
    assert "hi there" in messages[2]["content"][0]["text"]
    assert messages[3]["content"][-1]["text"] == "It says hi."
    assert messages[3]["usage"]["input"] == 100 and messages[3]["usage"]["output"] == 20
    # the tool result went back in the API's shape; the session id as pi sends it
    sent = APIS[api][1](fake.requests[-1].body)
    assert "hi there" in json.dumps(sent)
    if api == "openai-responses":
        assert sent["type"] == "function_call_output" and sent["call_id"] == "call_r1"
        assert fake.requests[-1].body["prompt_cache_key"] == session.pi_id
    elif api == "anthropic-messages":
        assert sent["type"] == "tool_result" and sent["tool_use_id"] == "call_r1"
    else:
        assert sent["functionResponse"]["name"] == "read"


@pytest.mark.parametrize("profile", list(APIS), indirect=True)
def test_a_summary_request(profile, fake):
    fake.push(Turn(text="## Goal\nShip it."))
    request = {
        "system": "Summarize.",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 900,
    }
    assert summarizer.complete(resolve_profile(profile), request).text == "## Goal\nShip it."
    body = fake.requests[-1].body
    assert "tools" not in body
    budget = {
        "openai-responses": lambda b: b["max_output_tokens"],
        "anthropic-messages": lambda b: b["max_tokens"],
        "google-generative-ai": lambda b: b["generationConfig"]["maxOutputTokens"],
    }[profile](body)
    assert budget == 900


@pytest.mark.parametrize("profile", ["anthropic-messages"], indirect=True)
def test_the_paths_thinking_level_reaches_the_request(profile, fake, owner, workspace, redis_ready):
    """pi records thinking-level changes as entries; the level on the path is sent."""
    session = sessions.create_session(owner=owner, cwd=str(workspace), model_profile=profile)
    sessions.append_entry(session, {"type": "thinking_level_change", "thinkingLevel": "high"})
    fake.push(Turn(text="ok"))
    assert jobs.run_job(str(chat.send_message(session, owner, "hi").pk)) == "done"
    body = fake.requests[-1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384, "display": "summarized"}


@pytest.mark.parametrize("profile", ["anthropic-messages"], indirect=True)
def test_a_path_without_a_level_asks_for_the_projects_default_thinking_level(
    profile, fake, owner, workspace, redis_ready, settings
):
    """As pi resumes a session that records no level: the default, which the project's
    own `.pi/settings.json` sets."""
    settings.PIWEB_PI_AGENT_DIR = ""  # no agent folder: the project's file alone
    session = sessions.create_session(owner=owner, cwd=str(workspace), model_profile=profile)
    fake.push(Turn(text="ok"), Turn(text="ok again"))
    assert jobs.run_job(str(chat.send_message(session, owner, "hi").pk)) == "done"
    assert "thinking" not in fake.requests[-1].body or fake.requests[-1].body["thinking"] == {
        "type": "disabled"
    }
    (workspace / ".pi").mkdir()
    (workspace / ".pi" / "settings.json").write_text('{"defaultThinkingLevel": "high"}')
    session.refresh_from_db()
    assert jobs.run_job(str(chat.send_message(session, owner, "again").pk)) == "done"
    body = fake.requests[-1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384, "display": "summarized"}
