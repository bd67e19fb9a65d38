"""One agent run: stream the model's reply, run its tool calls, repeat until it stops.

Pure of Django: the caller passes :class:`RunHooks` (build the context, persist a
message, publish an event, compact on overflow). Messages come out in pi's shapes:

- assistant ``{role, content:[thinking|text|toolCall{id,name,arguments}], api, provider,
  model, usage{input,output,cacheRead,cacheWrite,totalTokens,cost}, stopReason,
  timestamp[, errorMessage]}``;
- toolResult ``{role, toolCallId, toolName, content, details, isError, timestamp}``.

Provider errors that :mod:`agent.retry`'s policy retries (429, 5xx, …) are retried with
capped exponential backoff as long as nothing was streamed yet; a timeout or any other
error ends the run with a visible assistant message (stopReason ``error`` + ``errorMessage``, partial text kept). A
context-overflow error calls ``hooks.compact_for_overflow()`` and retries the turn once;
a second overflow is an error message. Abort (the :class:`AbortSignal`) closes the HTTP
stream at once and kills running tools; the partial message is kept as ``aborted``.
"""

from __future__ import annotations

import json
import queue
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import httpx
import openai

from .openai_format import to_openai_messages
from .retry import RetryPolicy
from .signals import AbortSignal
from .tools import Tool, ToolContext, ToolResult, execute_tool, parse_arguments, text_result

API = "openai-completions"
TEXT_FLUSH_SECONDS = 0.05
TEXT_FLUSH_CHARS = 4000

_OVERFLOW_PATTERNS = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|too many tokens|"
    r"prompt is too long|exceeds the context|reduce the length of the messages|"
    r"input is too long|context length",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    provider: str = "openai-compatible"
    max_output: int = 16384
    timeout: float = 120.0


class RunHooks(Protocol):
    def context(self) -> list[dict[str, Any]]:
        """The LLM messages (pi shapes, after convert_to_llm) for the next request."""

    def persist(self, message: dict[str, Any]) -> None:
        """Store one finished message (a tree entry)."""

    def emit(self, event: str, data: dict[str, Any]) -> None:
        """Publish one streaming event to every viewer."""

    def compact_for_overflow(self) -> bool:
        """Compact the session after a context overflow; True when the turn may be retried."""


def now_ms() -> int:
    return int(time.time() * 1000)


def empty_usage() -> dict[str, Any]:
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def usage_from_openai(usage: Any) -> dict[str, Any]:
    out = empty_usage()
    if usage is None:
        return out
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    completion = getattr(usage, "completion_tokens", 0) or 0
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    out["input"] = max(0, prompt - cached)
    out["output"] = completion
    out["cacheRead"] = cached
    out["totalTokens"] = getattr(usage, "total_tokens", 0) or (prompt + completion)
    return out


def is_context_overflow(exc: BaseException) -> bool:
    if not isinstance(exc, openai.APIStatusError):
        return False
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body) if isinstance(body, dict) else {}
    code = (error or {}).get("code") if isinstance(error, dict) else None
    if code == "context_length_exceeded":
        return True
    if exc.status_code in (400, 413, 422):
        return bool(_OVERFLOW_PATTERNS.search(str(exc.message or "")))
    return False


def error_text(exc: BaseException) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "Request timed out."
    if isinstance(exc, openai.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else None
        message = None
        if body:
            err = body.get("error", body)
            message = err.get("message") if isinstance(err, dict) else None
        return f"{exc.status_code} {message or exc.message}"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        return f"Connection error: {cause}" if cause else "Connection error."
    return f"{exc.__class__.__name__}: {exc}"


class _TextBatcher:
    """Light batching of text/thinking deltas into text_delta events."""

    def __init__(self, emit: Callable[[str, dict], None], run_id: str):
        self.emit, self.run_id = emit, run_id
        self.kind: str | None = None
        self.buf: list[str] = []
        self.size = 0
        self.last = time.monotonic()

    def add(self, kind: str, delta: str) -> None:
        if self.kind is not None and kind != self.kind:
            self.flush()
        self.kind = kind
        self.buf.append(delta)
        self.size += len(delta)
        if self.size >= TEXT_FLUSH_CHARS or time.monotonic() - self.last >= TEXT_FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.emit(
                "text_delta", {"run_id": self.run_id, "delta": "".join(self.buf), "kind": self.kind}
            )
        self.buf, self.size, self.last = [], 0, time.monotonic()


class _Assembler:
    """Builds pi's assistant content blocks from streamed chunks."""

    def __init__(self):
        self.blocks: list[dict[str, Any]] = []
        self.calls: dict[int, dict[str, Any]] = {}  # index -> {id, name, raw, block}
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.received = False

    def _block(self, kind: str) -> dict[str, Any]:
        if self.blocks and self.blocks[-1]["type"] == kind:
            return self.blocks[-1]
        block = {"type": kind, kind: ""} if kind in ("text", "thinking") else {"type": kind}
        self.blocks.append(block)
        return block

    def feed(self, chunk: Any, batcher: _TextBatcher) -> None:
        self.received = True
        if getattr(chunk, "usage", None):
            self.usage = chunk.usage
        for choice in chunk.choices or []:
            delta = choice.delta
            if delta is not None:
                extra = getattr(delta, "model_extra", None) or {}
                reasoning = extra.get("reasoning_content") or extra.get("reasoning")
                if reasoning:
                    self._block("thinking")["thinking"] += reasoning
                    batcher.add("thinking", reasoning)
                if delta.content:
                    self._block("text")["text"] += delta.content
                    batcher.add("text", delta.content)
                for tc in delta.tool_calls or []:
                    index = tc.index if tc.index is not None else len(self.calls)
                    call = self.calls.get(index)
                    if call is None:
                        block = {"type": "toolCall", "id": "", "name": "", "arguments": {}}
                        self.blocks.append(block)
                        call = self.calls[index] = {"raw": "", "block": block}
                    if tc.id:
                        call["block"]["id"] = tc.id
                    if tc.function is not None:
                        if tc.function.name:
                            call["block"]["name"] += tc.function.name
                        if tc.function.arguments:
                            call["raw"] += tc.function.arguments
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def finalize_calls(self) -> dict[str, str | None]:
        """Parse the arguments; returns {call id: problem or None}."""
        problems: dict[str, str | None] = {}
        for n, call in enumerate(self.calls.values()):
            block = call["block"]
            if not block["id"]:
                block["id"] = f"call_{n}_{int(time.time() * 1000)}"
            args, problem = parse_arguments(call["raw"])
            block["arguments"] = args if args is not None else {}
            problems[block["id"]] = problem
            call["problem"] = problem
        return problems

    def content(self) -> list[dict[str, Any]]:
        return [
            b for b in self.blocks if not (b["type"] in ("text", "thinking") and not b[b["type"]])
        ]


class AgentRun:
    def __init__(
        self,
        *,
        llm: LLMConfig,
        system_prompt: str,
        tools: list[Tool],
        tool_ctx: ToolContext,
        hooks: RunHooks,
        abort: AbortSignal,
        run_id: str,
        retry: RetryPolicy | None = None,
        max_turns: int = 200,
        http_client: httpx.Client | None = None,
    ):
        self.llm = llm
        self.system_prompt = system_prompt
        self.tools = {t.name: t for t in tools}
        self.tool_ctx = tool_ctx
        self.hooks = hooks
        self.abort = abort
        self.run_id = run_id
        self.retry = retry or RetryPolicy()
        self.max_turns = max_turns
        self.client = openai.OpenAI(
            base_url=llm.base_url,
            api_key=llm.api_key or "not-needed",
            timeout=httpx.Timeout(llm.timeout, connect=min(llm.timeout, 15.0)),
            max_retries=0,
            http_client=http_client,
        )
        self.pending_problems: dict[str, str | None] = {}

    # ------------------------------------------------------------------ messages

    def _assistant(self, content, stop_reason: str, usage=None, error: str | None = None) -> dict:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": API,
            "provider": self.llm.provider,
            "model": self.llm.model,
            "usage": usage or empty_usage(),
            "stopReason": stop_reason,
            "timestamp": now_ms(),
        }
        if error:
            message["errorMessage"] = error
        return message

    def _tool_result(self, block: dict, result: ToolResult) -> dict:
        message: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": block["id"],
            "toolName": block["name"],
            "content": result.content,
        }
        if result.details is not None:
            message["details"] = result.details
        message["isError"] = result.is_error
        message["timestamp"] = now_ms()
        return message

    # ------------------------------------------------------------------ streaming

    def _request(self, messages: list[dict]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.llm.model,
            "messages": to_openai_messages(self.system_prompt, messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.llm.max_output:
            kwargs["max_tokens"] = self.llm.max_output
        if self.tools:
            kwargs["tools"] = [t.openai_spec() for t in self.tools.values()]
        return kwargs

    def _stream_once(self, kwargs: dict, asm: _Assembler, batcher: _TextBatcher) -> str:
        """Stream one request into ``asm``. Returns "done" or "aborted"; raises API errors."""
        events: queue.Queue = queue.Queue()
        cancel = threading.Event()
        holder: dict[str, Any] = {}

        def pump() -> None:
            try:
                stream = self.client.chat.completions.create(**kwargs)
                holder["stream"] = stream
                if cancel.is_set():
                    stream.close()
                    return
                for chunk in stream:
                    if cancel.is_set():
                        break
                    events.put(("chunk", chunk))
                events.put(("done", None))
            except BaseException as exc:  # handed to the main thread
                events.put(("error", exc))

        def close_stream() -> None:
            cancel.set()
            events.put(("abort", None))
            stream = holder.get("stream")
            if stream is not None:
                try:
                    stream.close()
                except Exception:
                    pass

        thread = threading.Thread(target=pump, name=f"llm-stream-{self.run_id[:8]}", daemon=True)
        remove = self.abort.add_callback(close_stream)
        thread.start()
        try:
            while True:
                try:
                    kind, value = events.get(timeout=TEXT_FLUSH_SECONDS)
                except queue.Empty:
                    batcher.flush()  # the model paused: show what we have
                    continue
                if self.abort.is_set() or kind == "abort":
                    return "aborted"
                if kind == "chunk":
                    asm.feed(value, batcher)
                elif kind == "done":
                    return "done"
                else:
                    raise value
        finally:
            remove()
            batcher.flush()
            cancel.set()

    def stream_assistant(self, messages: list[dict]) -> tuple[dict[str, Any], BaseException | None]:
        """One assistant message (after retries). The exception is returned on overflow."""
        kwargs = self._request(messages)
        attempt = 0
        while True:
            asm = _Assembler()
            batcher = _TextBatcher(self.hooks.emit, self.run_id)
            try:
                status = self._stream_once(kwargs, asm, batcher)
            except BaseException as exc:
                if is_context_overflow(exc) and not asm.received:
                    return self._assistant([], "error", error=error_text(exc)), exc
                delay = None if asm.received else self.retry.delay(attempt, exc, streaming=True)
                if delay is not None:
                    attempt += 1
                    self.hooks.emit(
                        "run_status",
                        {"run_id": self.run_id, "status": "retrying", "attempt": attempt,
                         "delay": delay, "error": error_text(exc)},
                    )  # fmt: skip
                    if self.abort.wait(delay):
                        return self._assistant([], "aborted", error="Request was aborted"), None
                    continue
                self.pending_problems = asm.finalize_calls()
                usage = usage_from_openai(asm.usage)
                return self._assistant(asm.content(), "error", usage, error_text(exc)), None
            self.pending_problems = asm.finalize_calls()
            usage = usage_from_openai(asm.usage)
            if status == "aborted":
                return self._assistant(asm.content(), "aborted", usage, "Request was aborted"), None
            reason = {
                "stop": "stop",
                "length": "length",
                "tool_calls": "toolUse",
                "function_call": "toolUse",
            }.get(asm.finish_reason or "stop", "stop")
            if any(b["type"] == "toolCall" for b in asm.blocks):
                reason = "toolUse"
            if asm.finish_reason == "content_filter":
                return self._assistant(
                    asm.content(),
                    "error",
                    usage,
                    "Response blocked by the provider's content filter",
                ), None
            return self._assistant(asm.content(), reason, usage), None

    # ------------------------------------------------------------------ tools

    def _run_call(self, block: dict) -> ToolResult:
        problem = self.pending_problems.get(block["id"])
        if problem:
            return text_result(problem, {}, True)
        call_id = block["id"]

        def on_snapshot(snap) -> None:
            from .shell import snapshot_event

            self.hooks.emit(
                "bash_snapshot",
                {"run_id": self.run_id, "tool_call_id": call_id, **snapshot_event(snap)},
            )

        ctx = replace(self.tool_ctx, on_bash_snapshot=on_snapshot)
        return execute_tool(block["name"], block["arguments"], ctx, self.tools)

    def run_tools(self, calls: list[dict]) -> None:
        i = 0
        while i < len(calls):
            group = [calls[i]]
            tool = self.tools.get(calls[i]["name"])
            if tool is not None and tool.read_only:
                while i + len(group) < len(calls):
                    nxt = self.tools.get(calls[i + len(group)]["name"])
                    if nxt is None or not nxt.read_only:
                        break
                    group.append(calls[i + len(group)])
            i += len(group)
            for block in group:
                self.hooks.emit(
                    "tool_start",
                    {"run_id": self.run_id, "tool_call_id": block["id"], "name": block["name"], "args": block["arguments"]},
                )  # fmt: skip
            if self.abort.is_set():
                results = [
                    text_result("Tool execution skipped: the run was aborted", {}, True)
                    for _ in group
                ]
            elif len(group) == 1:
                results = [self._run_call(group[0])]
            else:
                with ThreadPoolExecutor(max_workers=min(4, len(group))) as pool:
                    results = list(pool.map(self._run_call, group))
            for block, result in zip(group, results, strict=True):
                self.hooks.emit(
                    "tool_end",
                    {
                        "run_id": self.run_id,
                        "tool_call_id": block["id"],
                        "is_error": result.is_error,
                    },
                )
                self.hooks.persist(self._tool_result(block, result))

    # ------------------------------------------------------------------ loop

    def run(self) -> str:
        """Run until the model stops; returns "done", "aborted" or "error"."""
        try:
            return self._run()
        finally:
            self.client.close()

    def _run(self) -> str:
        overflow_retried = False
        for _turn in range(self.max_turns):
            if self.abort.is_set():
                self.hooks.persist(self._assistant([], "aborted", error="Request was aborted"))
                return "aborted"
            message, overflow = self.stream_assistant(self.hooks.context())
            if overflow is not None:
                if not overflow_retried:
                    overflow_retried = True
                    if self.hooks.compact_for_overflow():
                        continue
                    message["errorMessage"] += " (compaction could not make room)"
                else:
                    message["errorMessage"] += " (still too long after compaction)"
                self.hooks.persist(message)
                return "error"
            self.hooks.persist(message)
            if message["stopReason"] in ("error", "aborted"):
                if message["stopReason"] == "aborted":
                    self._close_open_calls(message)
                return "error" if message["stopReason"] == "error" else "aborted"
            calls = [b for b in message["content"] if b["type"] == "toolCall"]
            if not calls:
                return "done"
            self.run_tools(calls)
            after_tools = getattr(self.hooks, "after_tools", None)
            if after_tools is not None:
                after_tools()  # e.g. a snapshot of the files the calls changed
        self.hooks.persist(
            self._assistant(
                [], "error", error=f"Stopped after {self.max_turns} turns without finishing."
            )
        )
        return "error"

    def _close_open_calls(self, message: dict) -> None:
        """Tool calls of an aborted message never run; nothing to persist (pi drops them)."""
        return None


def tool_call_args_json(block: dict) -> str:
    return json.dumps(block.get("arguments") or {}, ensure_ascii=False)
