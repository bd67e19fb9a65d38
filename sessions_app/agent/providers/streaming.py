"""The stream assembly every API shares: the pump that reads an SDK stream on a helper
thread so that abort is immediate, the :class:`StreamAssembly` that fills the assistant
message (text and thinking deltas, tool-call arguments gathered and parsed, usage in pi's
shape, the message or the error it ends with), and :func:`api_stream`, which makes an API
module's ``stream`` from its event reader, its opener and its error classifier.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .base import ModelRequest, ProviderError, ResolvedModel
from .conversion import empty_usage, new_message

ABORTED_TEXT = "Request was aborted"


IDLE_SECONDS = 0.05


class Pump:
    """Streams an SDK iterator on a helper thread so that the caller's thread can stop
    at once on abort: the abort callback closes the HTTP stream, the caller returns its
    partial message without waiting for the network."""

    def __init__(self, abort: Any | None, on_idle: Callable[[], None] | None = None):
        self.abort = abort
        self.on_idle = on_idle
        self.received = False

    def run(
        self,
        open_stream: Callable[[], Iterable[Any]],
        handle: Callable[[Any], None],
        close: Callable[[Any], None] | None = None,
    ) -> str:
        """Feed every event to ``handle``; "done" or "aborted"; SDK errors are raised."""
        if self.abort is not None and self.abort.is_set():
            return "aborted"
        reader = _StreamReader(open_stream, close)
        remove = self.abort.add_callback(reader.stop) if self.abort is not None else (lambda: None)
        reader.start()
        try:
            return self._drain(reader.events, handle)
        finally:
            remove()
            reader.cancel.set()

    def _drain(self, events: queue.Queue[Any], handle: Callable[[Any], None]) -> str:
        while True:
            try:
                kind, value = events.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                if self.on_idle is not None:
                    self.on_idle()
                continue
            if kind == "abort" or (self.abort is not None and self.abort.is_set()):
                return "aborted"
            if kind == "event":
                self.received = True
                handle(value)
            elif kind == "done":
                return "done"
            else:
                raise value


class _StreamReader:
    """The helper thread: opens the stream and queues its events; ``stop`` (from the
    abort callback, any thread) closes the stream under it."""

    def __init__(
        self, open_stream: Callable[[], Iterable[Any]], close: Callable[[Any], None] | None
    ):
        self.open_stream = open_stream
        self.close = close
        self.events: queue.Queue[Any] = queue.Queue()
        self.cancel = threading.Event()
        self.stream: Any = None

    def start(self) -> None:
        threading.Thread(target=self._read, name="model-stream", daemon=True).start()

    def _read(self) -> None:
        stream = None
        try:
            stream = self.open_stream()
            self.stream = stream
            if self.cancel.is_set():
                return
            for event in stream:
                if self.cancel.is_set():
                    break
                self.events.put(("event", event))
            self.events.put(("done", None))
        except BaseException as exc:  # handed to the caller's thread
            self.events.put(("error", exc))
        finally:
            if self.cancel.is_set() and stream is not None:
                _safe_close(stream, self.close)

    def stop(self) -> None:
        self.cancel.set()
        self.events.put(("abort", None))
        stream = self.stream
        if stream is not None:
            _safe_close(stream, self.close)


def _safe_close(stream: Any, close: Callable[[Any], None] | None) -> None:
    try:
        if close is not None:
            close(stream)
        elif hasattr(stream, "close"):
            stream.close()
    except Exception:
        pass


def parse_json_args(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments out of streamed JSON: (args, problem). pi repairs partial
    JSON silently; piweb tells the model its arguments were not valid JSON instead."""
    text = (raw or "").strip()
    if not text:
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, f"Invalid JSON in tool arguments ({exc.msg} at position {exc.pos}): {text[:500]}"
    if not isinstance(value, dict):
        return {}, f"Tool arguments must be a JSON object, got: {text[:500]}"
    return value, None


ARGS_PROBLEM = "_argsProblem"  # a private key on a toolCall block; the loop pops it


def usage_of(
    input_tokens: int,
    output: int,
    cache_read: int,
    cache_write: int,
    total: int | None = None,
) -> dict[str, Any]:
    """pi's usage shape (costs are priced later); the total is the sum unless the API
    reports one of its own."""
    if total is None:
        total = input_tokens + output + cache_read + cache_write
    return {
        **empty_usage(),
        "input": input_tokens,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": total,
    }


@dataclass
class Connection:
    """What opens one request's stream, and how to end it: ``close(stream)`` ends it at
    once (on abort; default: the stream's own ``close``), ``release()`` runs after the
    request whatever happened (a client made for this request alone)."""

    open: Callable[[], Iterable[Any]]
    close: Callable[[Any], None] | None = None
    release: Callable[[], None] = lambda: None


def api_stream(
    assembly: type[StreamAssembly],
    opener: Callable[[ResolvedModel, ModelRequest], Connection | Callable[[], Iterable[Any]]],
    to_error: Callable[[BaseException, ResolvedModel], ProviderError],
) -> Callable[..., dict[str, Any]]:
    """An API module's ``stream(resolved, request, *, abort, on_delta, on_idle)``, the one
    every API uses: ``assembly`` reads the API's events, ``opener`` checks the request and
    returns what opens its stream (a :class:`Connection`, or just its ``open``),
    ``to_error`` classifies the SDK's errors."""

    def stream(
        resolved: ResolvedModel,
        request: ModelRequest,
        *,
        abort: Any | None = None,
        on_delta: Callable[[str, str], None] | None = None,
        on_idle: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        """Stream one assistant message; raises ProviderError (``.partial`` holds what
        came)."""
        return assembly.start(resolved, request, on_delta).run(
            lambda: opener(resolved, request),
            abort=abort,
            on_idle=on_idle,
            to_error=lambda exc: to_error(exc, resolved),
        )

    return stream


class StreamAssembly:
    """What the API modules share while a response streams in: the assistant message
    being filled, text and thinking deltas passed on to ``on_delta``, tool-call argument
    text gathered per block and parsed at its end, and the outcome of the stream (the
    message, or a ProviderError carrying it). A subclass reads its API's events in
    ``feed``."""

    def __init__(self, message: dict[str, Any], on_delta: Callable[[str, str], None] | None):
        self.message = message
        self.on_delta = on_delta
        self.raw_arguments: dict[int, str] = {}  # id(toolCall block) -> JSON text so far
        self.error: str | ProviderError | None = None

    @classmethod
    def start(
        cls,
        resolved: ResolvedModel,
        request: ModelRequest,
        on_delta: Callable[[str, str], None] | None,
    ) -> StreamAssembly:
        """An assembly for one request's answer."""
        return cls(new_message(resolved), on_delta)

    def feed(self, event: Any) -> None:
        raise NotImplementedError

    def add_block(self, block: dict[str, Any]) -> dict[str, Any]:
        self.message["content"].append(block)
        return block

    def emit(self, kind: str, text: str) -> None:
        if self.on_delta and text:
            self.on_delta(kind, text)

    def append(self, block: dict[str, Any], kind: str, text: str) -> None:
        """Add streamed text to a text or thinking block and pass it on."""
        block[kind] += text
        self.emit(kind, text)

    def add_arguments(self, block: dict[str, Any], text: str) -> None:
        self.raw_arguments[id(block)] = self.raw_arguments.get(id(block), "") + text

    def parse_arguments(self, block: dict[str, Any]) -> None:
        """The block's gathered JSON becomes its arguments (once); blank text keeps the
        arguments the block started with."""
        raw = self.raw_arguments.pop(id(block), None)
        if raw is None or not raw.strip():
            return
        args, problem = parse_json_args(raw)
        block["arguments"] = args
        if problem:
            block[ARGS_PROBLEM] = problem

    def finalize(self) -> None:
        for block in self.message["content"]:
            if block.get("type") == "toolCall":
                self.parse_arguments(block)

    def incomplete(self) -> str | None:
        """Why a stream that ended without an error is not a whole message (None: it is)."""
        return None

    def run(
        self,
        prepare: Callable[[], Connection | Callable[[], Iterable[Any]]],
        *,
        abort: Any | None,
        on_idle: Callable[[], None] | None,
        to_error: Callable[[BaseException], ProviderError],
    ) -> dict[str, Any]:
        """Stream one assistant message: ``prepare`` checks the request and returns what
        opens the stream; errors carry the partial message (``.partial``)."""
        pump = Pump(abort, on_idle)
        try:
            prepared = prepare()
        except ProviderError as exc:
            raise fail(self.message, exc, False) from None
        connection = prepared if isinstance(prepared, Connection) else Connection(prepared)
        try:
            status = pump.run(connection.open, self.feed, connection.close)
        except BaseException as exc:  # SDK and transport errors
            self.finalize()
            raise fail(self.message, to_error(exc), pump.received) from None
        finally:
            connection.release()
        self.finalize()
        return self.outcome(status)

    def outcome(self, status: str) -> dict[str, Any]:
        if status == "aborted":
            return finish(self.message, "aborted")
        if self.error is not None:
            error = self.error
            if not isinstance(error, ProviderError):
                error = ProviderError(error, kind="other")
            raise fail(self.message, error, True)
        reason = self.incomplete()
        if reason is not None:
            raise fail(self.message, ProviderError(reason, kind="other"), True)
        return finish(self.message, "done")


def finish(message: dict[str, Any], status: str) -> dict[str, Any]:
    """Drop empty text/thinking blocks and mark an aborted message as pi does."""
    message["content"] = [
        b
        for b in message["content"]
        if not (
            b.get("type") in ("text", "thinking")
            and not b.get(b["type"])
            and not b.get("thinkingSignature")
        )
    ]
    if status == "aborted":
        message["stopReason"] = "aborted"
        message["errorMessage"] = ABORTED_TEXT
    return message


def fail(message: dict[str, Any], error: ProviderError, received: bool) -> ProviderError:
    """Attach the partial message (stopReason error) to the error and return it."""
    finish(message, "done")
    message["stopReason"] = "error"
    message["errorMessage"] = str(error)
    error.partial = message
    error.received = received
    return error
