"""pi session files with the shapes real pi users' sessions have (pi 0.80-1.6 writing).

`real_session_entries(target_bytes)` builds a v3 session, deterministic for a seed, that
grows until its JSONL is at least `target_bytes` long. What real files hold and our
hand-made fixtures did not:

- assistant messages with `api`, `provider`, `model`, `responseId`, full `usage` with
  `cost`, thinking blocks with long opaque `thinkingSignature`s (a few KB of base64 each,
  as Anthropic returns them), redacted thinking, text with `textSignature`, tool calls
  with `thoughtSignature` (Google);
- custom providers (a self-hosted vLLM / Ollama / a company gateway) and their APIs;
- the read tool's image results: a text block plus a real PNG as base64;
- an aborted run: the partial assistant message (stopReason "aborted", errorMessage,
  a tool call that never ran), the tool result pi writes for it, and the user carrying on;
- Chinese (and other non-ASCII) text in prompts, thinking, answers and file contents;
- bash executions, a model change, a thinking level change, a session name.

The line format is JSON.stringify's (serialize_entry): what pi writes.
"""

from __future__ import annotations

import base64
import random
import struct
import zlib

from sessions_app.core.jsonl import serialize_entry

SESSION_ID = "3b1f0c5e-9d2a-4e7b-8c61-2f4a5d6e7f80"
CWD = "/home/李雷/code/订单服务"

PROVIDERS = (
    # (provider, model, api): two built-in, three custom ones from models.json.
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("openai", "gpt-5.1-codex", "openai-responses"),
    ("my-vllm", "Qwen/Qwen3-Coder-30B-A3B-Instruct", "openai-completions"),
    ("ollama-local", "qwen3:32b", "openai-completions"),
    ("corp-gateway", "gemini-2.5-pro", "google-generative-ai"),
)
CHINESE = (
    "请帮我检查订单服务里的并发问题，特别是库存扣减的部分。",
    "我先读一下相关的代码，然后再决定怎么修改。",
    "这个函数在高并发下会出现超卖，需要加锁或者使用乐观锁。",
    "测试全部通过了。我把修改总结如下：使用数据库行锁保证库存一致性。",
    "注意：不要修改公共接口，保持向后兼容。",
)
ENGLISH = (
    "Let me look at the inventory module before changing anything.",
    "The race is between the read of `stock` and the write; wrap both in one transaction.",
    "All 214 tests pass. Summary of the change: row lock on the stock row, retry on conflict.",
)


def _png(rng: random.Random, width: int, height: int) -> str:
    """A real PNG (RGB noise, so it compresses badly) as base64."""
    rows = b"".join(
        b"\x00" + bytes(rng.getrandbits(8) for _ in range(width * 3)) for _ in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows))
    return base64.b64encode(png + chunk(b"IEND", b"")).decode()


def _signature(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size)).decode()


def _usage(rng: random.Random, zero: bool = False) -> dict:
    if zero:
        numbers = dict(input=0, output=0, cacheRead=0, cacheWrite=0, totalTokens=0)
        cost = dict(input=0, output=0, cacheRead=0, cacheWrite=0, total=0)
        return {**numbers, "cost": cost}
    inp, out, read = rng.randint(200, 4000), rng.randint(50, 3000), rng.randint(0, 90000)
    cost = {
        "input": inp * 3e-6,
        "output": out * 1.5e-5,
        "cacheRead": read * 3e-7,
        "cacheWrite": 0,
        "total": inp * 3e-6 + out * 1.5e-5 + read * 3e-7,
    }
    return dict(
        input=inp, output=out, cacheRead=read, cacheWrite=0, totalTokens=inp + out + read, cost=cost
    )


class _Writer:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.entries: list[dict] = []
        self.size = 0
        self.ms = 1767225600000  # 2026-01-01T00:00:00Z
        self.leaf: str | None = None
        self.ids: set[str] = set()

    def _id(self) -> str:
        while True:
            eid = f"{self.rng.getrandbits(32):08x}"
            if eid not in self.ids:
                self.ids.add(eid)
                return eid

    def _stamp(self) -> tuple[str, int]:
        self.ms += self.rng.randint(800, 40000)
        seconds, millis = divmod(self.ms, 1000)
        import datetime as dt

        moment = dt.datetime.fromtimestamp(seconds, dt.UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{millis:03d}Z", self.ms

    def add(self, entry_type: str, **fields) -> dict:
        stamp, _ = self._stamp()
        entry = {"type": entry_type, "id": self._id(), "parentId": self.leaf, "timestamp": stamp}
        entry.update(fields)
        self.entries.append(entry)
        self.size += len(serialize_entry(entry).encode("utf-8")) + 1
        self.leaf = entry["id"]
        return entry

    def message(self, message: dict) -> dict:
        message.setdefault("timestamp", self.ms)
        return self.add("message", message=message)

    def assistant(self, content: list, provider, stop="stop", **extra) -> dict:
        name, model, api = provider
        body = {"role": "assistant", "content": content, "api": api, "provider": name}
        body["model"] = model
        if stop != "aborted":
            body["responseId"] = (
                f"msg_01{_signature(self.rng, 18)[:22]}"
                if api == "anthropic-messages"
                else f"resp_{self.rng.getrandbits(96):024x}"
            )
        body["usage"] = _usage(self.rng, zero=stop == "aborted")
        body["stopReason"] = stop
        body.update(extra)
        return self.message(body)


def _thinking(w: _Writer, text: str, api: str) -> dict:
    block = {"type": "thinking", "thinking": text}
    if api == "anthropic-messages":
        block["thinkingSignature"] = _signature(w.rng, w.rng.randint(1500, 6000))
    elif api == "openai-responses":
        # OpenAI's reasoning item, kept whole as JSON text in the signature.
        item = {
            "type": "reasoning",
            "id": f"rs_{w.rng.getrandbits(96):024x}",
            "encrypted_content": _signature(w.rng, w.rng.randint(2000, 5000)),
            "summary": [{"type": "summary_text", "text": text}],
        }
        block["thinkingSignature"] = serialize_entry(item)
    return block


def _turn(w: _Writer, n: int, provider) -> None:
    rng = w.rng
    api = provider[2]
    prompt = rng.choice(CHINESE) if n % 2 else rng.choice(ENGLISH)
    w.message({"role": "user", "content": [{"type": "text", "text": f"{prompt} (#{n})"}]})
    call_id = (
        f"toolu_{rng.getrandbits(64):016x}"
        if api == "anthropic-messages"
        else (f"call_{rng.getrandbits(64):016x}|fc_{rng.getrandbits(64):016x}")
    )
    path = f"src/库存/module_{n}.py"
    call = {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": path}}
    if api == "google-generative-ai":
        call["thoughtSignature"] = _signature(rng, 600)
    w.assistant(
        [_thinking(w, rng.choice(CHINESE) + " " + rng.choice(ENGLISH), api), call],
        provider,
        stop="toolUse",
    )
    code = "\n".join(f"def 函数_{i}(x):\n    return x * {i}  # 注释 {i}" for i in range(60))
    w.message(
        {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "read",
            "content": [{"type": "text", "text": code}],
            "isError": False,
        }
    )
    text = {"type": "text", "text": rng.choice(CHINESE) + "\n\n" + rng.choice(ENGLISH)}
    if api == "openai-responses":
        text["textSignature"] = serialize_entry(
            {"v": 1, "id": f"msg_{rng.getrandbits(96):024x}", "phase": "final_answer"}
        )
    w.assistant([_thinking(w, rng.choice(ENGLISH), api), text], provider)


def _image_turn(w: _Writer, provider) -> None:
    rng = w.rng
    w.message({"role": "user", "content": "看一下这个截图，按钮的位置对吗？ docs/截图.png"})
    call_id = f"toolu_{rng.getrandbits(64):016x}"
    w.assistant(
        [
            {
                "type": "toolCall",
                "id": call_id,
                "name": "read",
                "arguments": {"path": "docs/截图.png"},
            }
        ],
        provider,
        stop="toolUse",
    )
    w.message(
        {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "read",
            "content": [
                {"type": "text", "text": "Read image file [image/png]"},
                {"type": "image", "data": _png(rng, 96, 64), "mimeType": "image/png"},
            ],
            "isError": False,
        }
    )
    w.assistant([{"type": "text", "text": "按钮在右上角，位置是对的。"}], provider)


def _aborted_run(w: _Writer, provider) -> None:
    rng = w.rng
    w.message({"role": "user", "content": "运行全部测试 (run the whole test suite)"})
    call_id = f"toolu_{rng.getrandbits(64):016x}"
    w.assistant(
        [
            {"type": "thinking", "thinking": "I will run pytest with -x so the first failure"},
            {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": "pyt"}},
        ],
        provider,
        stop="aborted",
        errorMessage="Request was aborted",
    )
    w.message(
        {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "bash",
            "content": [{"type": "text", "text": "Tool execution was aborted"}],
            "details": {},
            "isError": True,
        }
    )
    w.message({"role": "user", "content": "算了，只跑库存模块的测试。"})


def real_session_entries(target_bytes: int = 1_100_000, seed: int = 7) -> tuple[dict, list]:
    """(header, entries) of a pi session at least `target_bytes` long as JSONL."""
    w = _Writer(seed)
    header = {
        "type": "session",
        "version": 3,
        "id": SESSION_ID,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": CWD,
    }
    w.size = len(serialize_entry(header)) + 1
    w.add("model_change", provider=PROVIDERS[0][0], modelId=PROVIDERS[0][1])
    w.add("thinking_level_change", thinkingLevel="high")
    w.add("session_info", name="订单服务：库存并发修复")
    n = 0
    while w.size < target_bytes:
        provider = PROVIDERS[n % len(PROVIDERS)]
        if n and n % len(PROVIDERS) == 0:
            w.add("model_change", provider=provider[0], modelId=provider[1])
        _turn(w, n, provider)
        if n % 4 == 1:
            _image_turn(w, PROVIDERS[0])
        if n % 6 == 2:
            _aborted_run(w, provider)
        if n % 5 == 3:
            w.message(
                {
                    "role": "bashExecution",
                    "command": "pytest tests/库存 -q",
                    "output": "\x1b[32m..........\x1b[0m 10 passed in 0.42s\n",
                    "exitCode": 0,
                    "cancelled": False,
                    "truncated": False,
                }
            )
        n += 1
    return header, w.entries


def real_session_bytes(target_bytes: int = 1_100_000, seed: int = 7) -> bytes:
    header, entries = real_session_entries(target_bytes, seed)
    return "".join(serialize_entry(e) + "\n" for e in [header, *entries]).encode("utf-8")
