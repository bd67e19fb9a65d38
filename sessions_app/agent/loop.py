"""One agent run: stream the model's reply, run its tool calls, repeat until it stops.

Pure of Django: the caller passes :class:`RunHooks` (build the context, persist a
message, publish an event, compact on overflow). Messages come out in pi's shapes:

- assistant ``{role, content:[thinking|text|toolCall{id,name,arguments}], api, provider,
  model, usage{input,output,cacheRead,cacheWrite,totalTokens,cost}, stopReason,
  timestamp[, errorMessage]}``;
- toolResult ``{role, toolCallId, toolName, content, details, isError, timestamp}``.

Each turn goes to the module of ``providers`` that speaks the model's API
(``resolved.api``: openai-completions, openai-responses, anthropic-messages,
google-generative-ai); the loop itself knows no wire format. Provider errors that
:mod:`agent.retry`'s policy retries (``ProviderError`` kind ``retryable``: 429, 5xx, …)
are retried with capped exponential backoff as long as nothing was streamed yet; a
timeout, an auth error or any other error ends the run with a visible assistant message
(stopReason ``error`` + ``errorMessage``, partial text kept). A context-overflow error
(kind ``overflow``) calls ``hooks.compact_for_overflow()`` and retries the turn once; a
second overflow is an error message. Abort (the :class:`AbortSignal`) closes the HTTP
stream at once and kills running tools; the partial message is kept as ``aborted``.

Messages typed while the run works come through ``hooks.take_queued`` as pi 0.80.2's
agent loop takes them: a steering message after each turn (once its tool calls have all
run) and at the start, before the next request; a follow-up when the model stops without
tool calls and no steer waits, starting another turn of the same run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Protocol

from sessions_app.core.truncate import StreamSnapshot

from .providers import stream_for
from .providers.base import ModelRequest, ProviderError, ResolvedModel
from .providers.conversion import empty_usage
from .providers.streaming import ARGS_PROBLEM
from .retry import RetryPolicy, RetryWaitInterrupted, with_retries
from .shell import snapshot_event
from .signals import AbortSignal
from .tools import Tool, ToolContext, ToolResult, execute_tool, text_result

TEXT_FLUSH_SECONDS = 0.05
TEXT_FLUSH_CHARS = 4000


def request_tools(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """The tools as a request carries them (each API module puts them in its wire shape);
    also what an agent run records beside its answers (models.AnswerInput)."""
    return [
        {"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools
    ]


class RunHooks(Protocol):
    def context(self) -> list[dict[str, Any]]:
        """The LLM messages (pi shapes, after convert_to_llm) for the next request."""

    def persist(self, message: dict[str, Any]) -> None:
        """Store one finished message (a tree entry)."""

    def emit(self, event: str, data: dict[str, Any]) -> None:
        """Publish one streaming event to every viewer."""

    def compact_for_overflow(self) -> bool:
        """Compact the session after a context overflow; True when the turn may be retried."""

    def take_queued(self, mode: str) -> bool:
        """Deliver one queued user message of `mode` ("steer" or "follow_up") into the
        context (a persisted entry); True when there was one. Optional."""


def now_ms() -> int:
    return int(time.time() * 1000)


class _TextBatcher:
    """Light batching of text/thinking deltas into text_delta events."""

    def __init__(self, emit: Callable[[str, dict[str, Any]], None], run_id: str):
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


class AgentRun:
    def __init__(
        self,
        *,
        llm: ResolvedModel,
        system_prompt: str,
        tools: list[Tool],
        tool_ctx: ToolContext,
        hooks: RunHooks,
        abort: AbortSignal,
        run_id: str,
        retry: RetryPolicy | None = None,
        max_turns: int = 200,
        thinking_level: str = "off",
        session_id: str | None = None,
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
        self.thinking_level = thinking_level
        self.session_id = session_id
        self.pending_problems: dict[str, str | None] = {}

    # ------------------------------------------------------------------ messages

    def _assistant(
        self,
        content: list[dict[str, Any]],
        stop_reason: str,
        usage: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": self.llm.api,
            "provider": self.llm.provider,
            "model": self.llm.model_id,
            "usage": usage or empty_usage(),
            "stopReason": stop_reason,
            "timestamp": now_ms(),
        }
        if error:
            message["errorMessage"] = error
        return message

    def _tool_result(self, block: dict[str, Any], result: ToolResult) -> dict[str, Any]:
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

    def _request(self, messages: list[dict[str, Any]]) -> ModelRequest:
        return ModelRequest(
            system_prompt=self.system_prompt,
            messages=messages,
            tools=request_tools(self.tools.values()),
            thinking_level=self.thinking_level,
            session_id=self.session_id,
        )

    def _take_problems(self, message: dict[str, Any]) -> None:
        """Tool calls whose arguments were not valid JSON: the model is told so."""
        self.pending_problems = {}
        for block in message.get("content") or []:
            if block.get("type") == "toolCall":
                self.pending_problems[block["id"]] = block.pop(ARGS_PROBLEM, None)

    def stream_assistant(
        self, messages: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], BaseException | None]:
        """One assistant message (after retries). The exception is returned on overflow."""
        request = self._request(messages)
        try:
            call = stream_for(self.llm.api)
        except ProviderError as exc:  # an API piweb does not speak
            return self._assistant([], "error", error=str(exc)), None

        def once() -> dict[str, Any]:
            batcher = _TextBatcher(self.hooks.emit, self.run_id)
            try:
                return call(
                    self.llm, request, abort=self.abort, on_delta=batcher.add,
                    on_idle=batcher.flush,
                )  # fmt: skip
            finally:
                batcher.flush()

        def announce(attempt: int, delay: float, exc: ProviderError) -> None:
            self.hooks.emit(
                "run_status",
                {"run_id": self.run_id, "status": "retrying", "attempt": attempt,
                 "delay": delay, "error": str(exc)},
            )  # fmt: skip

        try:
            message = with_retries(
                once, self.retry, streaming=True, on_retry=announce, wait=self.abort.wait
            )
        except RetryWaitInterrupted:
            return self._assistant([], "aborted", error="Request was aborted"), None
        except ProviderError as exc:
            if exc.kind == "overflow" and not exc.received:
                return self._assistant([], "error", error=str(exc)), exc
            partial = exc.partial or self._assistant([], "error", error=str(exc))
            self._take_problems(partial)
            return partial, None
        self._take_problems(message)
        return message, None

    # ------------------------------------------------------------------ tools

    def _run_call(self, block: dict[str, Any]) -> ToolResult:
        problem = self.pending_problems.get(block["id"])
        if problem:
            return text_result(problem, {}, True)
        call_id = block["id"]

        def on_snapshot(snap: StreamSnapshot) -> None:
            self.hooks.emit(
                "bash_snapshot",
                {"run_id": self.run_id, "tool_call_id": call_id, **snapshot_event(snap)},
            )

        ctx = replace(self.tool_ctx, on_bash_snapshot=on_snapshot)
        return execute_tool(block["name"], block["arguments"], ctx, self.tools)

    def run_tools(self, calls: list[dict[str, Any]]) -> None:
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
        return self._run()

    def _take_queued(self, mode: str) -> bool:
        """pi's queues, one message per look: a steer after a turn's tool calls (and at
        the start), a follow-up when the run would otherwise end. None once aborted."""
        take: Callable[[str], bool] | None = getattr(self.hooks, "take_queued", None)
        if take is None or self.abort.is_set():
            return False
        return take(mode)

    def _run(self) -> str:
        overflow_retried = False
        self._take_queued("steer")  # typed while the run waited for a worker
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
            if calls:
                self.run_tools(calls)
                after_tools = getattr(self.hooks, "after_tools", None)
                if after_tools is not None:
                    after_tools()  # e.g. a snapshot of the files the calls changed
            if self._take_queued("steer") or calls:
                continue
            if not self._take_queued("follow_up"):
                return "done"
        self.hooks.persist(
            self._assistant(
                [], "error", error=f"Stopped after {self.max_turns} turns without finishing."
            )
        )
        return "error"

    def _close_open_calls(self, message: dict[str, Any]) -> None:
        """Tool calls of an aborted message never run; nothing to persist (pi drops them)."""
        return None
