"""The agent loop on every model API: retries under the one retry policy, overflow ->
compact and retry once, auth errors shown at once, through the fake providers."""

from __future__ import annotations

import pytest

from sessions_app.agent.loop import AgentRun
from sessions_app.agent.providers import APIS
from sessions_app.agent.providers.base import ResolvedModel
from sessions_app.agent.retry import RetryPolicy
from sessions_app.agent.signals import AbortSignal
from tests.support.fake_providers import FakeProviders, Turn, error, overflow


@pytest.fixture(scope="module")
def server():
    srv = FakeProviders()
    yield srv
    srv.close()


class Hooks:
    def __init__(self, compactable: bool = True):
        self.persisted: list[dict] = []
        self.events: list[tuple[str, dict]] = []
        self.compactions = 0
        self.compactable = compactable

    def context(self):
        return [{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}]

    def persist(self, message):
        self.persisted.append(message)

    def emit(self, event, data):
        self.events.append((event, data))

    def compact_for_overflow(self):
        self.compactions += 1
        return self.compactable


def agent(server, api, hooks):
    resolved = ResolvedModel(
        model={
            "id": "gemini-2.5-flash" if api == "google-generative-ai" else "m-test",
            "api": api,
            "provider": "testprov",
            "baseUrl": server.base_url(api),
            "reasoning": False,
            "input": ["text"],
            "contextWindow": 100000,
            "maxTokens": 8000,
        },
        api_key="sk-test",
    )
    return AgentRun(
        llm=resolved,
        system_prompt="sys",
        tools=[],
        tool_ctx=None,
        hooks=hooks,
        abort=AbortSignal(),
        run_id="run-1",
        retry=RetryPolicy(retries=2, base_delay=0.01, max_delay=0.02),
    )


@pytest.mark.parametrize("api", APIS)
def test_retryable_errors_are_retried_then_the_reply_is_kept(server, api):
    server.reset()
    server.push(
        error(api, 529 if api == "anthropic-messages" else 503, "busy"), Turn(text="Hello.")
    )
    hooks = Hooks()
    assert agent(server, api, hooks).run() == "done"
    assert len(server.requests) == 2
    (message,) = hooks.persisted
    assert message["api"] == api and message["content"][0]["text"] == "Hello."
    assert [e for e, d in hooks.events if e == "run_status"] == ["run_status"]
    assert any(e == "text_delta" and d["delta"] for e, d in hooks.events)


@pytest.mark.parametrize("api", APIS)
def test_overflow_compacts_and_retries_once(server, api):
    server.reset()
    server.push(overflow(api), Turn(text="Fits now."))
    hooks = Hooks()
    assert agent(server, api, hooks).run() == "done"
    assert hooks.compactions == 1 and hooks.persisted[-1]["content"][0]["text"] == "Fits now."

    server.reset()
    server.push(overflow(api), overflow(api))
    hooks = Hooks()
    assert agent(server, api, hooks).run() == "error"
    assert hooks.compactions == 1
    assert hooks.persisted[-1]["errorMessage"].endswith("(still too long after compaction)")


@pytest.mark.parametrize("api", APIS)
def test_auth_errors_end_the_run_at_once(server, api):
    server.reset()
    server.push(error(api, 401, "invalid key"))
    hooks = Hooks()
    assert agent(server, api, hooks).run() == "error"
    assert len(server.requests) == 1
    message = hooks.persisted[-1]
    assert message["stopReason"] == "error" and "testprov" in message["errorMessage"]
    assert "sk-test" not in message["errorMessage"]


def test_an_api_piweb_does_not_speak_is_an_error_message(server):
    hooks = Hooks()
    run = agent(server, "openai-completions", hooks)
    run.llm = ResolvedModel(model={**run.llm.model, "api": "bedrock-converse-stream"})
    assert run.run() == "error"
    message = hooks.persisted[-1]
    assert message["stopReason"] == "error" and "bedrock-converse-stream" in message["errorMessage"]
    assert "anthropic-messages" in message["errorMessage"]


def test_clients_are_reused_and_bounded():
    from sessions_app.agent.providers import transport

    made = []
    for n in range(transport.MAX_CLIENTS + 10):
        transport.cached_client(("bench", n), lambda n=n: made.append(n) or object())
    first = transport.cached_client(("bench", transport.MAX_CLIENTS + 9), object)
    assert transport.cached_client(("bench", transport.MAX_CLIENTS + 9), object) is first
    assert len(made) == transport.MAX_CLIENTS + 10
    assert len(transport._clients) <= transport.MAX_CLIENTS
