"""pi's four model APIs on the wire: each provider module against a fake server that
speaks that API's real SSE protocol, through the real official SDK (openai, anthropic,
google-genai). Per API: text, thinking (signatures kept as pi keeps them), a tool call,
usage with cache read/write, the stop reasons, a provider error, overflow, auth, abort,
and the request shapes pi 0.80.2 sends."""

from __future__ import annotations

import base64
import json
import threading

import pytest

from sessions_app.agent.providers import APIS, stream_for
from sessions_app.agent.providers.base import ModelRequest, ProviderError, ResolvedModel
from sessions_app.agent.signals import AbortSignal
from tests.support.fake_providers import Call, FakeProviders, Turn, error, overflow
from tests.support.waiting import wait_until

BASH = {
    "name": "bash",
    "description": "Run a command.",
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
        "additionalProperties": False,
    },
}
READ = {
    "name": "read",
    "description": "Read a file.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
}
MODEL_IDS = {
    "openai-completions": "gpt-test",
    "openai-responses": "gpt-5-test",
    "anthropic-messages": "claude-test",
    "google-generative-ai": "gemini-2.5-flash",
}


@pytest.fixture(scope="module")
def server():
    srv = FakeProviders()
    yield srv
    srv.close()


@pytest.fixture
def fake(server):
    server.reset()
    yield server
    server.reset()


def model(fake, api, **extra):
    spec = {
        "id": MODEL_IDS[api],
        "name": "Test model",
        "api": api,
        "provider": "testprov",
        "baseUrl": fake.base_url(api),
        "reasoning": True,
        "input": ["text", "image"],
        "cost": {"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite": 1.25},
        "contextWindow": 200000,
        "maxTokens": 32000,
    }
    spec.update(extra)
    return ResolvedModel(model=spec, api_key="sk-test-key", key_source="env", timeout=10)


def user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def request(*messages, level="off", tools=(BASH,), **kw):
    return ModelRequest(
        system_prompt="You are a test.",
        messages=list(messages) or [user("hi")],
        tools=list(tools),
        thinking_level=level,
        **kw,
    )


def run(resolved, req, **kw):
    return stream_for(resolved.api)(resolved, req, **kw)


@pytest.mark.parametrize("api", APIS)
def test_text_thinking_and_usage_with_cache(fake, api):
    fake.push(
        Turn(thinking="Weighing it.", text="The answer is 42.", cache_read=300, cache_write=40)
    )
    deltas = []
    message = run(
        model(fake, api), request(level="medium"), on_delta=lambda k, t: deltas.append((k, t))
    )
    assert message["role"] == "assistant" and message["stopReason"] == "stop"
    assert (message["api"], message["provider"], message["model"]) == (
        api,
        "testprov",
        MODEL_IDS[api],
    )
    thinking, text = message["content"]
    assert thinking["type"] == "thinking" and thinking["thinking"] == "Weighing it."
    assert text == {"type": "text", "text": "The answer is 42.", **_text_extra(api, text)}
    # Signatures as pi stores them, per API.
    signature = thinking["thinkingSignature"]
    if api == "openai-completions":
        assert signature == "reasoning_content"  # the field the thinking came in
    elif api == "openai-responses":
        item = json.loads(signature)  # the reasoning item, verbatim
        assert item["type"] == "reasoning" and item["encrypted_content"].startswith("enc-")
        assert item["summary"] == [{"type": "summary_text", "text": "Weighing it."}]
    else:
        assert signature == "c2lnLW9mLXRoZS10aGlua2luZw=="
    assert "".join(t for k, t in deltas if k == "text") == "The answer is 42."
    assert "Weighing it." in "".join(t for k, t in deltas if k == "thinking")
    usage = message["usage"]
    assert usage["input"] == 100 and usage["output"] == 20 and usage["cacheRead"] == 300
    # Google reports no cache writes; the others do.
    assert usage["cacheWrite"] == (0 if api == "google-generative-ai" else 40)
    assert usage["totalTokens"] == 100 + 20 + 300 + usage["cacheWrite"]
    assert usage["cost"] == {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}


def _text_extra(api, block):
    return {"textSignature": block["textSignature"]} if api == "openai-responses" else {}


@pytest.mark.parametrize("api", APIS)
def test_a_tool_call_and_its_replay(fake, api):
    fake.push(Turn(text="Listing.", calls=[Call("bash", {"command": "ls -la"}, id="call_abc")]))
    resolved = model(fake, api)
    first = run(resolved, request(user("list files")))
    assert first["stopReason"] == "toolUse"
    call = first["content"][-1]
    assert call["type"] == "toolCall" and call["name"] == "bash"
    assert call["arguments"] == {"command": "ls -la"}
    if api == "openai-responses":
        call_id, item_id = call["id"].split("|")
        assert call_id == "call_abc" and item_id.startswith("fc_")
    else:
        assert call["id"] == "call_abc"
    result = {
        "role": "toolResult",
        "toolCallId": call["id"],
        "toolName": "bash",
        "content": [{"type": "text", "text": "a.txt\nb.txt"}],
        "isError": False,
        "timestamp": 3,
    }
    fake.push(Turn(text="Two files."))
    second = run(resolved, request(user("list files"), first, result))
    assert second["content"] == [
        {"type": "text", "text": "Two files.", **_text_extra(api, second["content"][0])}
    ]
    body = fake.requests[-1].body
    if api == "openai-completions":
        assert body["messages"][-2]["tool_calls"][0] == {
            "id": "call_abc",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"command":"ls -la"}'},
        }
        assert body["messages"][-1] == {
            "role": "tool",
            "content": "a.txt\nb.txt",
            "tool_call_id": "call_abc",
        }
    elif api == "openai-responses":
        fc = body["input"][-2]
        assert fc["type"] == "function_call" and fc["call_id"] == "call_abc"
        assert fc["arguments"] == '{"command":"ls -la"}' and fc["id"].startswith("fc_")
        assert body["input"][-1] == {
            "type": "function_call_output",
            "call_id": "call_abc",
            "output": "a.txt\nb.txt",
        }
    elif api == "anthropic-messages":
        assert body["messages"][-2]["content"][-1] == {
            "type": "tool_use",
            "id": "call_abc",
            "name": "bash",
            "input": {"command": "ls -la"},
        }
        assert body["messages"][-1] == {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_abc",
                    "content": "a.txt\nb.txt",
                    "is_error": False,
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        }
    else:
        model_turn = body["contents"][-2]
        assert model_turn["role"] == "model"
        fc_part = model_turn["parts"][-1]
        assert fc_part["functionCall"] == {"name": "bash", "args": {"command": "ls -la"}}
        # the call's thought signature goes back as it came (base64)
        assert fc_part["thoughtSignature"] == base64.b64encode(b"call-signature").decode()
        assert body["contents"][-1] == {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "bash", "response": {"output": "a.txt\nb.txt"}}}
            ],
        }


@pytest.mark.parametrize("api", APIS)
def test_thinking_goes_back_as_pi_sends_it(fake, api):
    fake.push(Turn(thinking="Step one.", text="Done."))
    resolved = model(fake, api)
    first = run(resolved, request(level="high"))
    fake.push(Turn(text="ok"))
    run(resolved, request(user("hi"), first, user("again"), level="high"))
    body = fake.requests[-1].body
    if api == "openai-completions":
        assert body["messages"][2] == {
            "role": "assistant",
            "content": "Done.",
            "reasoning_content": "Step one.",
        }
    elif api == "openai-responses":
        reasoning = json.loads(first["content"][0]["thinkingSignature"])
        assert body["input"][2] == reasoning  # verbatim
        message = body["input"][3]
        assert message["type"] == "message" and message["id"].startswith("msg_")
        assert message["content"] == [{"type": "output_text", "text": "Done.", "annotations": []}]
    elif api == "anthropic-messages":
        assert body["messages"][1]["content"] == [
            {
                "type": "thinking",
                "thinking": "Step one.",
                "signature": "c2lnLW9mLXRoZS10aGlua2luZw==",
            },
            {"type": "text", "text": "Done."},
        ]
    else:
        parts = body["contents"][1]["parts"]
        assert parts[0] == {
            "text": "Step one.",
            "thought": True,
            "thoughtSignature": "c2lnLW9mLXRoZS10aGlua2luZw==",
        }
        assert parts[1] == {"text": "Done."}


@pytest.mark.parametrize("api", APIS)
def test_stop_reason_length(fake, api):
    stop = {
        "openai-completions": "length",
        "openai-responses": "incomplete",
        "anthropic-messages": "max_tokens",
        "google-generative-ai": "MAX_TOKENS",
    }[api]
    fake.push(Turn(text="cut", stop=stop))
    assert run(model(fake, api), request())["stopReason"] == "length"


@pytest.mark.parametrize("api", APIS)
def test_errors_become_provider_errors_of_the_right_kind(fake, api):
    resolved = model(fake, api)
    fake.push(error(api, 503, "overloaded right now"))
    with pytest.raises(ProviderError) as caught:
        run(resolved, request())
    assert caught.value.kind == "retryable" and caught.value.status == 503
    assert caught.value.partial["stopReason"] == "error"
    assert "overloaded right now" in caught.value.partial["errorMessage"]
    assert not caught.value.received

    fake.push(error(api, 400, "bad request: unknown field"))
    with pytest.raises(ProviderError) as caught:
        run(resolved, request())
    assert caught.value.kind == "other" and caught.value.status == 400

    fake.push(overflow(api))
    with pytest.raises(ProviderError) as caught:
        run(resolved, request())
    assert caught.value.kind == "overflow"


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors_name_the_provider_and_never_the_key(fake, api, status):
    fake.push(error(api, status, "invalid api key"))
    with pytest.raises(ProviderError) as caught:
        run(model(fake, api), request())
    exc = caught.value
    assert exc.kind == "auth" and exc.status == status
    assert "testprov" in str(exc) and "sk-test-key" not in str(exc)
    assert "sk-test-key" not in json.dumps(exc.partial)


@pytest.mark.parametrize("api", APIS)
def test_no_key_is_an_auth_error_before_any_request(fake, api):
    resolved = model(fake, api)
    resolved = ResolvedModel(model=resolved.model, api_key="", key_source="none")
    with pytest.raises(ProviderError) as caught:
        run(resolved, request())
    assert caught.value.kind == "auth" and "testprov" in str(caught.value)
    assert fake.requests == []


@pytest.mark.parametrize("api", APIS)
def test_abort_closes_the_stream_at_once_and_keeps_the_partial_message(fake, api):
    fake.push(Turn(text="word " * 400, chunk=5, delay=0.02))
    abort = AbortSignal()
    got = []

    def on_delta(kind, text):
        got.append(text)
        if len(got) == 3:
            threading.Thread(target=abort.trigger).start()

    message = run(model(fake, api), request(), abort=abort, on_delta=on_delta)
    assert message["stopReason"] == "aborted" and message["errorMessage"] == "Request was aborted"
    assert message["content"][0]["text"].startswith("word word")
    assert len(message["content"][0]["text"]) < 400 * 5
    assert wait_until(lambda: fake.disconnects, 30)  # the server saw the connection go
    assert fake.disconnects == 1
    # ... in the middle of the stream: it had written far fewer than the 400 text frames
    # (the client closed the connection instead of reading the reply to its end).
    assert fake.frames_sent < 400, fake.frames_sent


@pytest.mark.parametrize("api", APIS)
def test_an_aborted_signal_sends_nothing(fake, api):
    abort = AbortSignal()
    abort.trigger()
    message = run(model(fake, api), request(), abort=abort)
    assert message["stopReason"] == "aborted" and fake.requests == []


@pytest.mark.parametrize("api", APIS)
def test_invalid_tool_json_is_reported_not_guessed(fake, api):
    if api == "google-generative-ai":
        pytest.skip("Gemini sends arguments as an object, never as JSON text")
    fake.push(Turn(calls=[Call("bash", '{"command": "ls', id="call_bad")]))
    message = run(model(fake, api), request())
    block = message["content"][-1]
    assert block["arguments"] == {}
    assert "Invalid JSON" in block["_argsProblem"]


# --------------------------------------------------------------------------- shapes


def test_completions_request_fields_follow_compat(fake):
    api = "openai-completions"
    fake.push(Turn(text="a"), Turn(text="b"), Turn(text="c"))
    resolved = model(fake, api, reasoning=False)
    run(resolved, request())
    body = fake.requests[-1].body
    assert list(body) == ["model", "messages", "stream", "stream_options", "store", "tools"]
    assert body["messages"][0] == {"role": "system", "content": "You are a test."}
    assert body["tools"][0]["function"]["strict"] is False
    assert "max_tokens" not in body and "max_completion_tokens" not in body  # agent turn

    run(resolved, request(max_tokens=4096))  # a summary request: its budget
    assert fake.requests[-1].body["max_completion_tokens"] == 4096

    compat = {"maxTokensField": "max_tokens", "supportsStore": False, "supportsStrictMode": False,
              "supportsUsageInStreaming": False, "supportsDeveloperRole": False}  # fmt: skip
    run(model(fake, api, compat=compat), request(max_tokens=100, level="high"))
    body = fake.requests[-1].body
    assert body["max_tokens"] == 100 and "max_completion_tokens" not in body
    assert "store" not in body and "stream_options" not in body
    assert "strict" not in body["tools"][0]["function"]
    assert body["messages"][0]["role"] == "system"  # reasoning model, but no developer role
    assert body["reasoning_effort"] == "high"


def test_headers_and_auth_header_of_models_json(fake):
    fake.push(Turn(text="a"), Turn(text="b"))
    resolved = model(fake, "openai-completions", headers={"X-Team": "alpha"})
    run(resolved, request())
    headers = fake.requests[-1].headers
    assert headers["x-team"] == "alpha" and headers["authorization"] == "Bearer sk-test-key"
    resolved = ResolvedModel(
        model={
            **resolved.model,
            "api": "anthropic-messages",
            "baseUrl": fake.root,
            "authHeader": True,
        },
        api_key="sk-ant-key",
        headers={"X-Extra": "1"},
    )
    run(resolved, request())
    headers = fake.requests[-1].headers
    assert headers["x-api-key"] == "sk-ant-key" and headers["authorization"] == "Bearer sk-ant-key"
    assert headers["x-extra"] == "1" and headers["anthropic-version"] == "2023-06-01"
    assert headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"


def test_anthropic_cache_control_and_key_order(fake):
    fake.push(Turn(text="ok"))
    tool_turn = {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "toolu_1", "name": "read", "arguments": {"path": "a"}}],
        "api": "anthropic-messages", "provider": "testprov", "model": "claude-test",
        "stopReason": "toolUse", "timestamp": 2, "usage": {},
    }  # fmt: skip
    results = [
        {"role": "toolResult", "toolCallId": "toolu_1", "toolName": "read",
         "content": [{"type": "text", "text": "A"}], "isError": False, "timestamp": 3},
    ]  # fmt: skip
    run(
        model(fake, "anthropic-messages"),
        request(user("read a"), tool_turn, *results, tools=(READ, BASH)),
    )
    body = fake.requests[-1].body
    assert list(body) == [
        "model",
        "messages",
        "max_tokens",
        "stream",
        "system",
        "tools",
        "thinking",
    ]
    assert body["max_tokens"] == 32000 and body["thinking"] == {"type": "disabled"}
    assert body["system"] == [
        {"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}
    ]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1] == {
        "name": "bash",
        "description": "Run a command.",
        "eager_input_streaming": True,
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
        "cache_control": {"type": "ephemeral"},
    }  # additionalProperties is not sent
    marked = [
        (i, j)
        for i, m in enumerate(body["messages"])
        for j, b in enumerate(m["content"] if isinstance(m["content"], list) else [])
        if "cache_control" in b
    ]
    assert marked == [(2, 0)]  # only the last block of the last (user) message


@pytest.mark.parametrize(
    ("level", "extra", "thinking", "max_tokens"),
    [
        ("minimal", {}, {"type": "enabled", "budget_tokens": 1024, "display": "summarized"}, 32000),
        ("medium", {}, {"type": "enabled", "budget_tokens": 8192, "display": "summarized"}, 32000),
        ("xhigh", {}, {"type": "enabled", "budget_tokens": 16384, "display": "summarized"}, 32000),
        ("high", {"maxTokens": 8000}, {"type": "enabled", "budget_tokens": 6976, "display": "summarized"}, 8000),
        ("off", {"thinkingLevelMap": {"off": None}}, {"type": "enabled", "budget_tokens": 1024, "display": "summarized"}, 32000),
    ],
)  # fmt: skip
def test_anthropic_thinking_budgets(fake, level, extra, thinking, max_tokens):
    fake.push(Turn(text="ok"))
    run(model(fake, "anthropic-messages", **extra), request(level=level))
    body = fake.requests[-1].body
    assert body["thinking"] == thinking and body["max_tokens"] == max_tokens


def test_anthropic_adaptive_thinking_and_summary_budget(fake):
    fake.push(Turn(text="ok"), Turn(text="ok"))
    adaptive = model(
        fake,
        "anthropic-messages",
        compat={"forceAdaptiveThinking": True},
        thinkingLevelMap={"xhigh": "max"},
    )
    run(adaptive, request(level="xhigh"))
    body = fake.requests[-1].body
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": "max"}
    assert "anthropic-beta" not in fake.requests[-1].headers
    # a summary budget with thinking on: budget + thinking, capped by the model
    run(model(fake, "anthropic-messages"), request(level="low", max_tokens=4096))
    body = fake.requests[-1].body
    assert body["max_tokens"] == 4096 + 2048
    assert body["thinking"]["budget_tokens"] == 2048


def test_anthropic_redacted_thinking_is_stored_and_sent_back_as_pi_does(fake):
    fake.push(Turn(redacted="opaque-blob", text="Fine."), Turn(text="ok"))
    resolved = model(fake, "anthropic-messages")
    first = run(resolved, request(level="medium"))
    assert first["content"][0] == {
        "type": "thinking",
        "thinking": "[Reasoning redacted]",
        "thinkingSignature": "opaque-blob",
        "redacted": True,
    }
    run(resolved, request(user("hi"), first, user("more"), level="medium"))
    sent = fake.requests[-1].body["messages"][1]["content"]
    assert sent[0] == {"type": "redacted_thinking", "data": "opaque-blob"}


def test_responses_request_shape_and_levels(fake):
    api = "openai-responses"
    fake.push(Turn(text="a"), Turn(text="b"), Turn(text="c"))
    resolved = model(fake, api, thinkingLevelMap={"off": None})
    run(resolved, request(session_id="sess-1234"))
    req = fake.requests[-1]
    assert list(req.body) == ["model", "input", "stream", "prompt_cache_key", "store", "tools", "reasoning", "include"]  # fmt: skip
    assert req.body["input"][0] == {"role": "developer", "content": "You are a test."}
    assert req.body["prompt_cache_key"] == "sess-1234" and req.body["store"] is False
    # off is not a level of this model: clamped to minimal, as pi's session clamps it
    assert req.body["reasoning"] == {"effort": "minimal", "summary": "auto"}
    assert req.body["include"] == ["reasoning.encrypted_content"]
    assert req.headers["session_id"] == "sess-1234"
    assert req.headers["x-client-request-id"] == "sess-1234"
    assert req.body["tools"][0]["strict"] is False
    assert req.body["tools"][0]["parameters"] == BASH["parameters"]  # as is

    run(model(fake, api), request())  # a model that allows off
    assert fake.requests[-1].body["reasoning"] == {"effort": "none"}
    assert "include" not in fake.requests[-1].body
    run(model(fake, api, reasoning=False), request(max_tokens=900))
    body = fake.requests[-1].body
    assert body["input"][0]["role"] == "system" and body["max_output_tokens"] == 900
    assert "reasoning" not in body


@pytest.mark.parametrize(
    ("model_id", "level", "config"),
    [
        ("gemini-2.5-flash", "medium", {"includeThoughts": True, "thinkingBudget": 8192}),
        ("gemini-2.5-pro", "high", {"includeThoughts": True, "thinkingBudget": 32768}),
        ("gemini-2.5-flash", "off", {"thinkingBudget": 0}),
        ("gemini-3-pro-preview", "medium", {"includeThoughts": True, "thinkingLevel": "HIGH"}),
        ("gemini-3-flash-preview", "off", {"thinkingLevel": "MINIMAL"}),
    ],
)
def test_google_thinking_config(fake, model_id, level, config):
    fake.push(Turn(text="ok"))
    run(model(fake, "google-generative-ai", id=model_id), request(level=level))
    req = fake.requests[-1]
    assert req.path.startswith(f"/v1beta/models/{model_id}:streamGenerateContent")
    assert "alt=sse" in req.path and req.headers["x-goog-api-key"] == "sk-test-key"
    assert req.body["generationConfig"]["thinkingConfig"] == config
    assert req.body["systemInstruction"]["parts"] == [{"text": "You are a test."}]
    assert "maxOutputTokens" not in req.body["generationConfig"]


def test_images_for_each_api(fake):
    png = base64.b64encode(b"\x89PNG fake").decode()
    message = {
        "role": "user",
        "content": [{"type": "text", "text": "see"}, {"type": "image", "data": png, "mimeType": "image/png"}],
        "timestamp": 1,
    }  # fmt: skip
    for api in APIS:
        fake.push(Turn(text="ok"))
        run(model(fake, api), request(message))
    bodies = [r.body for r in fake.requests]
    assert bodies[0]["messages"][1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{png}"},
    }
    assert bodies[1]["input"][1]["content"][1] == {
        "type": "input_image",
        "detail": "auto",
        "image_url": f"data:image/png;base64,{png}",
    }
    assert bodies[2]["messages"][0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": png},
        "cache_control": {"type": "ephemeral"},
    }
    part = bodies[3]["contents"][0]["parts"][1]
    assert part == {"inlineData": {"mimeType": "image/png", "data": png}}


def test_anthropic_oauth_tool_names_come_back_as_ours(fake):
    fake.push(Turn(calls=[Call("Bash", {"command": "ls"}, id="toolu_1")]))
    resolved = model(fake, "anthropic-messages")
    resolved = ResolvedModel(model=resolved.model, api_key="sk-ant-oat01-x")
    message = run(resolved, request())
    assert message["content"][-1]["name"] == "bash"
    sent = fake.requests[-1]
    assert sent.body["tools"][0]["name"] == "Bash"
    assert (
        sent.headers["authorization"] == "Bearer sk-ant-oat01-x" and "x-api-key" not in sent.headers
    )
    assert sent.headers["anthropic-beta"].startswith("claude-code-20250219,oauth-2025-04-20")


# What the agent loop is given (sessions_app/agent/providers/base.py's ResolvedModel).
def test_the_api_key_is_not_in_the_models_repr():
    from sessions_app.agent.providers.base import ResolvedModel

    resolved = ResolvedModel(
        model={"id": "m", "api": "openai-completions", "provider": "p"},
        api_key="sk-very-secret",
        headers={"Authorization": "Bearer sk-very-secret"},
    )
    assert "sk-very-secret" not in repr(resolved)
    assert resolved.api_key == "sk-very-secret"


def test_long_cache_retention_follows_the_setting(fake, settings):
    settings.PI_CACHE_RETENTION = "long"  # pi's PI_CACHE_RETENTION, read through settings
    fake.push(Turn(text="ok"))
    run(model(fake, "anthropic-messages"), request(user("hi")))
    system = fake.requests[-1].body["system"]
    assert system == [
        {
            "type": "text",
            "text": "You are a test.",
            "cache_control": {"type": "ephemeral", "ttl": "1h"},
        }
    ]
