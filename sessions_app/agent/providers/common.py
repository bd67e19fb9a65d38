"""What the four API modules share (no Django): pi's message transform, thinking-level
rules, max-token arithmetic, overflow patterns, error classification and the streaming
pump that makes abort immediate.

Behaviour follows pi-ai 0.80.2 (``transform-messages.js``, ``simple-options.js``,
``models.js``, ``utils/overflow.js``); the code is ours.
"""

from __future__ import annotations

import json
import os
import queue
import re
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sessions_app.core.pi_config import THINKING_LEVELS

from .base import ModelRequest, ProviderError, ResolvedModel

NO_RESULT_TEXT = "No result provided"
ABORTED_TEXT = "Request was aborted"
IDLE_SECONDS = 0.05

# --------------------------------------------------------------------------- messages


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


def new_message(resolved: ResolvedModel) -> dict[str, Any]:
    """An empty assistant message in pi's shape; the API module fills it while streaming."""
    return {
        "role": "assistant",
        "content": [],
        "api": resolved.api,
        "provider": resolved.provider,
        "model": resolved.model_id,
        "usage": empty_usage(),
        "stopReason": "stop",
        "timestamp": now_ms(),
    }


_LONE_SURROGATE = re.compile(
    r"[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]"
)


def clean(text: str) -> str:
    """Drop unpaired UTF-16 surrogates (they break JSON encoding at the provider)."""
    return _LONE_SURROGATE.sub("", text) if text else text


def content_list(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)]


def user_blocks(
    content: Any,
    text_block: Callable[[str], dict[str, Any]],
    image_block: Callable[[dict], dict[str, Any]],
) -> list[dict[str, Any]]:
    """A user message's content (text or blocks) in an API's block shape, text cleaned."""
    return [
        text_block(clean(item.get("text", ""))) if item.get("type") == "text" else image_block(item)
        for item in content_list(content)
    ]


def _image_placeholder(content: list[dict], placeholder: str) -> list[dict]:
    out: list[dict] = []
    previous = False
    for block in content:
        if block.get("type") == "image":
            if not previous:
                out.append({"type": "text", "text": placeholder})
            previous = True
            continue
        out.append(block)
        previous = block.get("text") == placeholder
    return out


def transform_messages(
    messages: list[dict[str, Any]],
    model: dict[str, Any],
    normalize_id: Callable[[str, dict], str] | None = None,
) -> list[dict[str, Any]]:
    """pi's transformMessages: images dropped for text-only models, thinking of another
    model turned into text, tool-call ids normalized (results follow), failed or aborted
    assistant turns left out, and a synthetic error result for every call left without
    one."""
    id_map: dict[str, str] = {}
    prepared = [_prepare_message(msg, model, normalize_id, id_map) for msg in messages]
    return _answer_every_call(prepared)


def _prepare_message(
    msg: dict[str, Any],
    model: dict[str, Any],
    normalize_id: Callable[[str, dict], str] | None,
    id_map: dict[str, str],
) -> dict[str, Any]:
    """One message as this model may see it (a copy); ``id_map`` gathers renamed calls."""
    msg = dict(msg)
    if msg.get("content") is None:
        msg["content"] = []
    role = msg.get("role")
    vision = "image" in (model.get("input") or ["text"])
    if not vision and role in ("user", "toolResult") and isinstance(msg["content"], list):
        placeholder = (
            "(image omitted: model does not support images)"
            if role == "user"
            else "(tool image omitted: model does not support images)"
        )
        msg["content"] = _image_placeholder(msg["content"], placeholder)
    if role == "toolResult":
        mapped = id_map.get(msg.get("toolCallId"))
        if mapped and mapped != msg.get("toolCallId"):
            msg["toolCallId"] = mapped
    elif role == "assistant":
        same_keys = (model.get("provider"), model.get("api"), model.get("id"))
        same = (msg.get("provider"), msg.get("api"), msg.get("model")) == same_keys
        blocks = (
            _replay_block(b, msg, same, normalize_id, id_map) for b in content_list(msg["content"])
        )
        msg["content"] = [b for b in blocks if b is not None]
    return msg


def _replay_block(
    block: dict[str, Any],
    msg: dict[str, Any],
    same: bool,
    normalize_id: Callable[[str, dict], str] | None,
    id_map: dict[str, str],
) -> dict[str, Any] | None:
    """An assistant block as sent back (None: left out); ``same``: the model that wrote
    it is the one asked now."""
    kind = block.get("type")
    if kind == "thinking":
        return _replay_thinking(block, same)
    if kind == "text":
        return block if same else {"type": "text", "text": block.get("text", "")}
    if kind != "toolCall":
        return block
    call = block
    if not same and call.get("thoughtSignature"):
        call = {k: v for k, v in call.items() if k != "thoughtSignature"}
    if not same and normalize_id is not None:
        new_id = normalize_id(call.get("id") or "", msg)
        if new_id != call.get("id"):
            id_map[call.get("id")] = new_id
            call = {**call, "id": new_id}
    return call


def _replay_thinking(block: dict[str, Any], same: bool) -> dict[str, Any] | None:
    if block.get("redacted"):
        return block if same else None
    if same and block.get("thinkingSignature"):
        return block
    if not (block.get("thinking") or "").strip():
        return None
    return block if same else {"type": "text", "text": block["thinking"]}


def _answer_every_call(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Failed or aborted assistant turns left out; an error result for each tool call
    that has none before the next assistant or user message."""
    out: list[dict[str, Any]] = []
    pending: list[dict] = []
    seen: set[str] = set()
    for msg in messages:
        role = msg.get("role")
        if role in ("assistant", "user"):
            out.extend(_missing_results(pending, seen))
            pending, seen = [], set()
            if role == "assistant":
                if msg.get("stopReason") in ("error", "aborted"):
                    continue
                pending = [b for b in msg["content"] if b.get("type") == "toolCall"]
        elif role == "toolResult":
            seen.add(msg.get("toolCallId"))
        out.append(msg)
    out.extend(_missing_results(pending, seen))
    return out


def _missing_results(calls: list[dict], answered: set[str]) -> list[dict[str, Any]]:
    return [
        {
            "role": "toolResult",
            "toolCallId": call.get("id"),
            "toolName": call.get("name"),
            "content": [{"type": "text", "text": NO_RESULT_TEXT}],
            "isError": True,
            "timestamp": now_ms(),
        }
        for call in calls
        if call.get("id") not in answered
    ]


def tool_text(content: list[dict]) -> str:
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def has_images(content: list[dict]) -> bool:
    return any(b.get("type") == "image" for b in content)


# --------------------------------------------------------------------------- thinking


def supported_levels(model: dict[str, Any]) -> list[str]:
    """pi's getSupportedThinkingLevels."""
    if not model.get("reasoning"):
        return ["off"]
    level_map = model.get("thinkingLevelMap") or {}
    levels = []
    for level in THINKING_LEVELS:
        if level in level_map and level_map[level] is None:
            continue
        if level in ("xhigh", "max") and level not in level_map:
            continue
        levels.append(level)
    return levels


def clamp_level(model: dict[str, Any], level: str) -> str:
    """pi's clampThinkingLevel: the level itself, else the next one up, else down."""
    available = supported_levels(model)
    if level in available:
        return level
    if level not in THINKING_LEVELS:
        return available[0] if available else "off"
    index = THINKING_LEVELS.index(level)
    for candidate in THINKING_LEVELS[index:]:
        if candidate in available:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:index]):
        if candidate in available:
            return candidate
    return available[0] if available else "off"


def reasoning_level(resolved: ResolvedModel, request: ModelRequest) -> str | None:
    """The level pi passes as ``reasoning`` (None: thinking off). pi's session first
    clamps its level to what the model supports (a non-reasoning model: off; a model
    whose ``thinkingLevelMap`` has ``off: null``: the lowest level it has)."""
    level = clamp_level(resolved.model, request.thinking_level or "off")
    return None if level == "off" else level


def clamp_reasoning(level: str) -> str:
    return "high" if level in ("xhigh", "max") else level


DEFAULT_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}


def thinking_budgets(model: dict[str, Any]) -> dict[str, int]:
    """Budgets per level; ``thinkingBudgets`` (settings.json, carried on the model by
    the service layer) overrides the defaults."""
    return {**DEFAULT_BUDGETS, **(model.get("thinkingBudgets") or {})}


def adjust_for_thinking(
    base_max: int | None, model_max: int, level: str, budgets: dict[str, int]
) -> tuple[int, int]:
    """pi's adjustMaxTokensForThinking: (max_tokens, thinking budget)."""
    budget = budgets[clamp_reasoning(level)]
    max_tokens = model_max if base_max is None else min(base_max + budget, model_max)
    if max_tokens <= budget:
        budget = max(0, max_tokens - 1024)
    return max_tokens, budget


def base_max_tokens(request: ModelRequest) -> int | None:
    """pi 0.80.2's buildBaseOptions: the caller's cap or none (agent turns give none;
    summaries give their budget). There is no fitting to the window in 0.80.2."""
    return int(request.max_tokens) if request.max_tokens else None


def cache_retention() -> str:
    """pi reads PI_CACHE_RETENTION=long; anything else is the default short retention."""
    return "long" if os.environ.get("PI_CACHE_RETENTION") == "long" else "short"


# --------------------------------------------------------------------------- headers


def request_headers(resolved: ResolvedModel) -> dict[str, str]:
    """The model's ``headers`` then the resolved ones (options win, as in pi); models.json
    ``authHeader`` sends the key as a Bearer token."""
    headers = {**(resolved.model.get("headers") or {}), **(resolved.headers or {})}
    if resolved.model.get("authHeader") and resolved.api_key:
        if not any(k.lower() == "authorization" for k in headers):
            headers["Authorization"] = f"Bearer {resolved.api_key}"
    return {k: v for k, v in headers.items() if v is not None}


def has_header(headers: dict[str, str], *names: str) -> bool:
    wanted = {n.lower() for n in names}
    return any(k.lower() in wanted and str(v).strip() for k, v in headers.items())


def require_key(resolved: ResolvedModel, headers: dict[str, str], *auth_headers: str) -> str:
    """The key to hand the SDK; an auth error naming the provider when there is none
    (pi accepts a header that carries the auth instead)."""
    if resolved.api_key:
        return resolved.api_key
    if has_header(headers, "authorization", "cf-aig-authorization", *auth_headers):
        return "unused"
    raise ProviderError(
        f"No API key for provider {resolved.provider}: add one on the Models page or in "
        "the server's configuration.",
        kind="auth",
    )


_SSL_CONTEXT: ssl.SSLContext | None = None
_SSL_LOCK = threading.Lock()


def ssl_context() -> ssl.SSLContext:
    """One verified TLS context per process: loading the CA bundle takes ~0.2 s."""
    global _SSL_CONTEXT
    with _SSL_LOCK:
        if _SSL_CONTEXT is None:
            try:
                import certifi

                _SSL_CONTEXT = ssl.create_default_context(cafile=certifi.where())
            except ImportError:  # pragma: no cover
                _SSL_CONTEXT = ssl.create_default_context()
        return _SSL_CONTEXT


_clients: dict[tuple, Any] = {}
_clients_lock = threading.Lock()
MAX_CLIENTS = 64


def cached_client(key: tuple, factory: Callable[[], Any]) -> Any:
    """One SDK client per endpoint, key and headers per process (clients are thread-safe
    and keep their connection pool). At most MAX_CLIENTS are kept (per-user keys make
    many); the least recently used one is dropped, and closes when its last stream does."""
    key = (os.getpid(), *key)
    with _clients_lock:
        client = _clients.pop(key, None)
        if client is None:
            client = factory()
        _clients[key] = client  # most recently used last
        while len(_clients) > MAX_CLIENTS:
            _clients.pop(next(iter(_clients)))
        return client


def endpoint_client(
    api: str,
    resolved: ResolvedModel,
    key: str,
    headers: dict[str, str],
    factory: Callable[[], Any],
) -> Any:
    """The cached SDK client of an API for the model's endpoint, key, headers and
    timeout."""
    endpoint = (resolved.model.get("baseUrl"), key, tuple(sorted(headers.items())))
    return cached_client((api, *endpoint, resolved.timeout), factory)


def post_stream(
    client: Any, path: str, body: dict[str, Any], cast_to: type, stream_cls: type
) -> Callable[[], Iterable[Any]]:
    """What opens a streamed POST of ``body`` as built (the openai and anthropic SDKs
    share this client interface)."""
    return lambda: client.post(path, body=body, cast_to=cast_to, stream=True, stream_cls=stream_cls)


# --------------------------------------------------------------------------- errors

OVERFLOW_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"prompt is too long",
        r"request_too_large",
        r"input is too long for requested model",
        r"exceeds the context window",
        r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
        r"input token count.*exceeds the maximum",
        r"maximum prompt length is \d+",
        r"reduce the length of the messages",
        r"maximum context length is \d+ tokens",
        r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
        r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
        r"exceeds the limit of \d+",
        r"exceeds the available context size",
        r"greater than the context length",
        r"context window exceeds limit",
        r"exceeded model token limit",
        r"too large for model with \d+ maximum context length",
        r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
        r"model_context_window_exceeded",
        r"prompt too long; exceeded (?:max )?context length",
        r"context[_ ]length[_ ]exceeded",
        r"too many tokens",
        r"token limit exceeded",
        r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",
    )
]
NON_OVERFLOW_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (r"^(Throttling error|Service unavailable):", r"rate limit", r"too many requests")
]
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


def is_overflow_text(text: str) -> bool:
    """pi's isContextOverflow on an error message."""
    if not text or any(p.search(text) for p in NON_OVERFLOW_PATTERNS):
        return False
    return any(p.search(text) for p in OVERFLOW_PATTERNS)


def classify(
    provider: str,
    text: str,
    status: int | None,
    *,
    connection: bool = False,
    retry_after: float | None = None,
    code: str | None = None,
) -> ProviderError:
    """A ProviderError whose kind the retry policy and the loop act on."""
    if code == "context_length_exceeded" or is_overflow_text(text):
        return ProviderError(text, kind="overflow", status=status)
    if status in (401, 403):
        return ProviderError(
            f"Authentication with {provider} failed ({text}). Check the API key for "
            f"{provider} on the Models page or in the server's configuration.",
            kind="auth",
            status=status,
        )
    if connection or (status is not None and (status in RETRYABLE_STATUS or status >= 500)):
        return ProviderError(text, kind="retryable", status=status, retry_after=retry_after)
    return ProviderError(text, kind="other", status=status)


def header_retry_after(response: Any) -> float | None:
    if response is None:
        return None
    try:
        value = response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def body_message(body: Any) -> str | None:
    """The provider's own error message out of a parsed error body."""
    if isinstance(body, list) and body:
        body = body[0]
    if not isinstance(body, dict):
        return None
    err = body.get("error", body)
    if isinstance(err, dict):
        return err.get("message") or None
    if isinstance(err, str):
        return err
    return None


def body_code(body: Any) -> str | None:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            code = err.get("code") or err.get("type")
            return code if isinstance(code, str) else None
    return None


# --------------------------------------------------------------------------- streaming


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

    def _drain(self, events: queue.Queue, handle: Callable[[Any], None]) -> str:
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
        self.events: queue.Queue = queue.Queue()
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


def parse_json_args(raw: str) -> tuple[dict[str, Any], str | None]:
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
