"""The latency piweb adds to the first streamed token, per model API.

A fake provider on loopback (tests/support/fake_providers.py) answers every request at
once with a short streamed reply in the API's own SSE protocol. For each API:

- piweb: ``providers.stream_for(api)(resolved, request, on_delta=...)``, timed from the
  call to the first text delta (building the request body, the official SDK's client and
  request, the SSE parsing, piweb's event handling, the hand-over between threads);
- bare: the same request body posted with a plain ``httpx2`` client, timed to the first
  line that holds the reply's text (what any client needs at least).

Added latency = piweb - bare, at p50 and p90. Target: p50 under 30 ms for every API.

    .venv/bin/python bench/provider_bench.py [--runs 200] [--warmup 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx2  # noqa: E402

from sessions_app.agent.providers import APIS, stream_for  # noqa: E402
from sessions_app.agent.providers.base import ModelRequest, ResolvedModel  # noqa: E402
from tests.support.fake_providers import FakeProviders, Turn  # noqa: E402

TARGET_MS = 30.0
MODEL_IDS = {
    "openai-completions": "gpt-bench",
    "openai-responses": "gpt-bench",
    "anthropic-messages": "claude-bench",
    "google-generative-ai": "gemini-2.5-flash",
}
TOOLS = [
    {
        "name": name,
        "description": f"The {name} tool.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "command": {"type": "string"}},
            "required": [],
        },
    }
    for name in ("read", "bash", "edit", "write")
]


def conversation(turns: int) -> list[dict]:
    """A realistic history: turns of a question, a tool call and its result."""
    messages: list[dict] = []
    for n in range(turns):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"Question {n}? " * 20}], "timestamp": n})  # fmt: skip
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "toolCall", "id": f"call_{n}", "name": "bash", "arguments": {"command": f"ls {n}"}},
                ],
                "api": "x", "provider": "x", "model": "x", "stopReason": "toolUse", "timestamp": n,
                "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
            }
        )  # fmt: skip
        messages.append({"role": "toolResult", "toolCallId": f"call_{n}", "toolName": "bash", "content": [{"type": "text", "text": "file\n" * 50}], "isError": False, "timestamp": n})  # fmt: skip
    messages.append({"role": "user", "content": [{"type": "text", "text": "And now?"}], "timestamp": turns})  # fmt: skip
    return messages


def resolved_for(server: FakeProviders, api: str) -> ResolvedModel:
    return ResolvedModel(
        model={
            "id": MODEL_IDS[api],
            "name": "bench",
            "api": api,
            "provider": "bench",
            "baseUrl": server.base_url(api),
            "reasoning": True,
            "input": ["text", "image"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 200000,
            "maxTokens": 32000,
        },
        api_key="sk-bench",
    )


def piweb_first_token(server, api, request) -> float:
    resolved = resolved_for(server, api)
    call = stream_for(api)
    first: list[float] = []

    def on_delta(kind: str, _text: str) -> None:
        if kind == "text" and not first:
            first.append(time.perf_counter())

    server.push(Turn(text="Hello there, this is the reply.", input=10, output=5))
    started = time.perf_counter()
    call(resolved, request, on_delta=on_delta)
    return (first[0] - started) * 1000


def bare_first_token(server, api, body, client: httpx2.Client) -> float:
    url = {
        "openai-completions": f"{server.root}/v1/chat/completions",
        "openai-responses": f"{server.root}/v1/responses",
        "anthropic-messages": f"{server.root}/v1/messages",
        "google-generative-ai": f"{server.root}/v1beta/models/{MODEL_IDS[api]}:streamGenerateContent?alt=sse",
    }[api]
    marker = "Hell"
    server.push(Turn(text="Hello there, this is the reply.", input=10, output=5))
    started = time.perf_counter()
    took = None
    with client.stream("POST", url, content=json.dumps(body)) as response:
        for line in response.iter_lines():  # read to the end: the connection is reused
            if took is None and marker in line:
                took = (time.perf_counter() - started) * 1000
    return took


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--turns", type=int, default=20, help="history length (tool turns)")
    args = parser.parse_args()

    server = FakeProviders()
    request = ModelRequest(
        system_prompt="You are a coding assistant. " * 40,
        messages=conversation(args.turns),
        tools=TOOLS,
        thinking_level="medium",
        session_id="bench-session",
    )
    client = httpx2.Client(headers={"content-type": "application/json"})
    print(
        f"first streamed token, {args.runs} runs per API, {args.turns} tool turns of history (ms)"
    )
    print(
        f"{'API':<22} {'piweb p50':>10} {'piweb p90':>10} {'bare p50':>9} {'added p50':>10} {'added p90':>10}"
    )
    failed = False
    try:
        for api in APIS:
            for _ in range(args.warmup):
                piweb_first_token(server, api, request)
            body = server.requests[-1].body
            server.reset()
            ours, bare = [], []
            for _ in range(args.runs):
                ours.append(piweb_first_token(server, api, request))
                bare.append(bare_first_token(server, api, body, client))
                server.requests.clear()
            added = [a - b for a, b in zip(ours, bare, strict=True)]
            p50 = statistics.median(added)
            failed |= p50 >= TARGET_MS
            print(
                f"{api:<22} {statistics.median(ours):>10.2f} {percentile(ours, 0.9):>10.2f} "
                f"{statistics.median(bare):>9.2f} {p50:>10.2f} {percentile(added, 0.9):>10.2f}"
                f"  {'ok' if p50 < TARGET_MS else 'OVER TARGET'}"
            )
    finally:
        client.close()
        server.close()
    print(f"target: added p50 < {TARGET_MS:.0f} ms")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
