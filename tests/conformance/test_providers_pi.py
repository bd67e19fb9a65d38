"""piweb's request bodies equal pi 0.80.2's, API by API.

pi itself (``bench/pi_reference``'s pi 0.80.2, on the pi-ai 0.80.2 it shipped with) runs
``pi -p`` against the fake providers, with a models.json whose provider ``baseUrl``
points at them: one turn that thinks and calls ``bash``, then the turn after the tool
result. piweb's provider module then sends the same conversation (the messages pi stored
in its session file, pi's system prompt and pi's tool definitions, the session id, the
thinking level) and the two bodies must be equal: keys, key order, values. The system
prompt and tool descriptions are pi's here so that the whole body can be compared; in
piweb they are its own prose (see docs/PI_COMPATIBILITY.md for every other difference).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sessions_app.agent.providers import APIS, stream_for
from sessions_app.agent.providers.base import ModelRequest, ResolvedModel
from tests.support.fake_providers import Call, FakeProviders, Turn
from tests.support.pi_reference import ROOT, _node

PI_PACKAGE = ROOT / "bench/pi_reference/node_modules/pi-0.80.2"
PI_CLI = Path(os.environ.get("PIWEB_PI_WIRE_CLI") or PI_PACKAGE / "dist/cli.js")
MODEL_IDS = {
    "openai-completions": "gpt-test",
    "openai-responses": "gpt-5-test",
    "anthropic-messages": "claude-test",
    "google-generative-ai": "gemini-2.5-flash",
}
SAME_HEADERS = (
    "authorization",
    "x-api-key",
    "anthropic-version",
    "anthropic-beta",
    "anthropic-dangerous-direct-browser-access",
    "session_id",
    "x-client-request-id",
    "x-goog-api-key",
    "x-team",
)


def _pi_ai_version() -> str | None:
    """The pi-ai that pi 0.80.2's CLI loads (its own nested copy, else the shared one)."""
    for base in (PI_CLI.parents[1] / "node_modules", PI_CLI.parents[3]):
        package = base / "@earendil-works/pi-ai/package.json"
        if package.exists():
            return json.loads(package.read_text())["version"]
    return None


def _pi() -> str:
    node, why = _node()
    if node is not None and not PI_CLI.exists():
        why = f"pi 0.80.2 is not installed ({PI_CLI}; run bin/install-pi-reference)"
    elif node is not None and _pi_ai_version() != "0.80.2":
        why = (
            f"pi 0.80.2 runs on pi-ai {_pi_ai_version()}, not its own 0.80.2 (its CLI does not "
            "start so; bench/pi_reference/package.json's overrides pin it)"
        )
    else:
        return node
    if os.environ.get("PIWEB_REQUIRE_PI") == "1":
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def server():
    srv = FakeProviders()
    yield srv
    srv.close()


def model_spec(server, api):
    return {
        "id": MODEL_IDS[api],
        "name": "Test model",
        "reasoning": True,
        "input": ["text", "image"],
        "contextWindow": 200000,
        "maxTokens": 32000,
        "cost": {"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite": 1.25},
    }


def run_pi(
    node,
    server,
    api,
    tmp_path: Path,
    level: str,
    extra: dict | None = None,
    key: str = "sk-test-key",
):
    agent_dir, work = tmp_path / "agent", tmp_path / "work"
    agent_dir.mkdir()
    work.mkdir()
    config = {
        "providers": {
            "testprov": {
                "baseUrl": server.base_url(api),
                "api": api,
                "apiKey": key,
                "headers": {"X-Team": "alpha"},
                "models": [{**model_spec(server, api), **(extra or {})}],
            }
        }
    }
    (agent_dir / "models.json").write_text(json.dumps(config))
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(tmp_path)}
    model_id = (extra or {}).get("id", MODEL_IDS[api])
    args = [node, str(PI_CLI), "--provider", "testprov", "--model", model_id]
    args += ["--thinking", level, "--no-context-files", "--no-skills", "-p", "list files"]
    proc = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sessions = list((agent_dir / "sessions").rglob("*.jsonl"))
    assert len(sessions) == 1
    entries = [json.loads(line) for line in sessions[0].read_text().splitlines() if line.strip()]
    header = entries[0]
    messages = [e["message"] for e in entries if e.get("type") == "message"]
    return header["id"], messages


def pi_prompt_and_tools(api, body):
    """pi's own system prompt and tool definitions, out of its request."""
    if api == "openai-completions":
        prompt = body["messages"][0]["content"]
        tools = [
            {k: t["function"][k] for k in ("name", "description", "parameters")}
            for t in body["tools"]
        ]
    elif api == "openai-responses":
        prompt = body["input"][0]["content"]
        tools = [{k: t[k] for k in ("name", "description", "parameters")} for t in body["tools"]]
    elif api == "anthropic-messages":
        prompt = body["system"][-1]["text"]  # (after Claude Code's identity block, with OAuth)
        tools = [  # (pi's own names: an OAuth request carries Claude Code's)
            {
                "name": t["name"].lower(),
                "description": t["description"],
                "parameters": t["input_schema"],
            }
            for t in body["tools"]
        ]
    else:
        prompt = body["systemInstruction"]["parts"][0]["text"]
        decls = body["tools"][0]["functionDeclarations"]
        tools = [
            {
                "name": d["name"],
                "description": d["description"],
                "parameters": d["parametersJsonSchema"],
            }
            for d in decls
        ]
    return prompt, tools


def ordered(value):
    """A structure whose comparison also checks key order."""
    if isinstance(value, dict):
        return [(k, ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [ordered(v) for v in value]
    return value


COMPAT_CASES = [
    ("openai-completions", {"compat": {"maxTokensField": "max_tokens", "supportsStore": False,
                                        "supportsDeveloperRole": False, "supportsStrictMode": False}}),
    ("openai-completions", {"thinkingLevelMap": {"high": "max-effort", "off": "none"},
                            "compat": {"supportsUsageInStreaming": False}}),
    ("anthropic-messages", {"compat": {"supportsEagerToolInputStreaming": False,
                                        "supportsCacheControlOnTools": False}}),
    ("anthropic-messages", {"compat": {"forceAdaptiveThinking": True},
                            "thinkingLevelMap": {"xhigh": "max"}}),
    ("openai-responses", {"thinkingLevelMap": {"off": None}}),
    ("openai-responses", {"reasoning": False}),
    ("google-generative-ai", {"id": "gemini-3-pro-preview"}),
]  # fmt: skip


@pytest.mark.parametrize("level", ["off", "high"])
@pytest.mark.parametrize(("api", "extra"), COMPAT_CASES)
def test_models_json_compat_and_thinking_maps_as_pi_reads_them(server, api, extra, level, tmp_path):
    test_piweb_sends_what_pi_sends(server, api, level, tmp_path, extra)


@pytest.mark.parametrize("level", ["off", "high"])
def test_an_anthropic_oauth_token_speaks_as_claude_code_like_pi(server, level, tmp_path):
    """With a Claude subscription token pi presents itself as Claude Code: Bearer auth,
    Claude Code's betas and user agent, its identity block, its tool names."""
    test_piweb_sends_what_pi_sends(
        server, "anthropic-messages", level, tmp_path, key="sk-ant-oat01-test-token"
    )
    body = server.requests[-1].body
    assert body["system"][0]["text"].startswith("You are Claude Code")
    assert [t["name"] for t in body["tools"]] == ["Read", "Bash", "Edit", "Write"]
    assert server.requests[-1].headers["authorization"] == "Bearer sk-ant-oat01-test-token"
    assert "x-api-key" not in server.requests[-1].headers


@pytest.mark.parametrize("level", ["off", "high"])
@pytest.mark.parametrize("api", APIS)
def test_piweb_sends_what_pi_sends(server, api, level, tmp_path, extra=None, key="sk-test-key"):
    node = _pi()
    extra = extra or {}
    server.reset()
    server.push(
        Turn(thinking="Let me look.", text="Checking.", calls=[Call("bash", {"command": "echo hello"}, id="call_one")]),
        Turn(text="All done."),
    )  # fmt: skip
    session_id, stored = run_pi(node, server, api, tmp_path, level, extra, key)
    pi_requests = list(server.requests)
    assert len(pi_requests) == 2, [r.path for r in pi_requests]
    assert [m["role"] for m in stored] == ["user", "assistant", "toolResult", "assistant"]

    prompt, tools = pi_prompt_and_tools(api, pi_requests[0].body)
    resolved = ResolvedModel(
        model={
            **model_spec(server, api),
            **extra,
            "api": api,
            "provider": "testprov",
            "baseUrl": server.base_url(api),
        },
        api_key=key,
        headers={"X-Team": "alpha"},
    )
    server.reset()
    for n, history in enumerate((stored[:1], stored[:3])):
        server.push(Turn(text="ok"))
        request = ModelRequest(
            system_prompt=prompt,
            messages=history,
            tools=tools,
            thinking_level=level,
            session_id=session_id,
        )
        stream_for(api)(resolved, request)
        ours, theirs = server.requests[-1], pi_requests[n]
        assert ours.path == theirs.path
        assert ordered(ours.body) == ordered(theirs.body)
        for name in SAME_HEADERS + (("user-agent", "x-app") if "oat" in key else ()):
            assert ours.headers.get(name) == theirs.headers.get(name), name


SUMMARY_SCRIPT = """
import { completeSimple } from "@earendil-works/pi-ai/compat";
const input = JSON.parse(process.argv[1]);
const result = await completeSimple(input.model, input.context, input.options);
process.stdout.write(JSON.stringify({ stopReason: result.stopReason, error: result.errorMessage }));
"""


@pytest.mark.parametrize("level", ["off", "high"])
@pytest.mark.parametrize("api", APIS)
def test_summary_requests_are_sent_as_pi_sends_them(server, api, level, settings):
    """A compaction summary request: streamed, no tools, the budget as max tokens and the
    session's thinking level, as pi's generateSummary sends it through completeSimple."""
    from sessions_app.services import summarizer

    node = _pi()
    settings.PIWEB_LLM_RETRIES = 0
    model = {
        **model_spec(server, api),
        "api": api,
        "provider": "testprov",
        "baseUrl": server.base_url(api),
    }
    prompt = "<conversation>\n[User]: hi\n</conversation>\n\nSummarize it."
    server.reset()
    server.push(Turn(text="## Goal\nsummary"))
    options = {"maxTokens": 4096, "apiKey": "sk-test-key"}
    if level != "off":
        options["reasoning"] = level
    payload = {
        "model": model,
        "context": {
            "systemPrompt": "You summarize.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": 1}
            ],
        },
        "options": options,
    }
    proc = subprocess.run(
        [node, "--input-type=module", "-e", SUMMARY_SCRIPT, json.dumps(payload)],
        cwd=PI_CLI.parents[1],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["stopReason"] == "stop"
    theirs = server.requests[-1]

    server.push(Turn(text="## Goal\nsummary"))
    resolved = ResolvedModel(model=model, api_key="sk-test-key")
    request = {
        "system": "You summarize.",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 4096,
        "thinking_level": level,
    }
    assert summarizer.complete(resolved, request).text == "## Goal\nsummary"
    ours = server.requests[-1]
    assert ordered(ours.body) == ordered(theirs.body)
    if api == "openai-completions":
        assert ours.body["max_completion_tokens"] == 4096 and ours.body["stream"] is True
