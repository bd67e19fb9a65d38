"""Scripted model servers on loopback for pi's four model APIs, each speaking its real
streaming wire protocol (SSE), so the code under test goes through the real official
SDKs (``openai``, ``anthropic``, ``google-genai``) and pi itself can be pointed at them.

One server answers all four paths:

- ``POST /v1/chat/completions`` (openai-completions): ``data:`` chunks, ``[DONE]``;
- ``POST /v1/responses`` (openai-responses): ``event: response.*`` events;
- ``POST /v1/messages`` (anthropic-messages): ``message_start`` … ``message_stop``;
- ``POST /v1beta/models/{id}:streamGenerateContent?alt=sse`` (google-generative-ai).

Tests push :class:`Turn` scripts; each request takes the next one, whatever its API.
Every request is recorded (path, headers, body). An empty script answers 500.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Call:
    name: str
    arguments: dict | str
    id: str = ""

    @property
    def raw(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, separators=(",", ":"))


@dataclass
class Turn:
    text: str = ""
    thinking: str = ""
    signature: str = "c2lnLW9mLXRoZS10aGlua2luZw=="  # base64, as Google requires
    redacted: str = ""  # Anthropic redacted_thinking data
    calls: list[Call] = field(default_factory=list)
    input: int = 100
    output: int = 20
    cache_read: int = 0
    cache_write: int = 0
    stop: str | None = None  # the API's own stop value; default from the content
    status: int = 200
    error: dict | None = None  # the error body for a non-200 answer
    chunk: int = 4
    delay: float = 0.0  # seconds between events
    first_delay: float = 0.0


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict


class FakeProviders:
    def __init__(self) -> None:
        self._script: list[Turn] = []
        self._lock = threading.Lock()
        self.requests: list[Request] = []
        self.disconnects = 0
        self.frames_sent = 0  # stream frames written, over all requests
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def base_url(self, api: str) -> str:
        """The ``baseUrl`` a pi models.json gives for this API (as pi's catalog writes it)."""
        return {
            "openai-completions": f"{self.root}/v1",
            "openai-responses": f"{self.root}/v1",
            "anthropic-messages": self.root,
            "google-generative-ai": f"{self.root}/v1beta",
        }[api]

    def push(self, *turns: Turn) -> None:
        with self._lock:
            self._script.extend(turns)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.disconnects = 0
            self.frames_sent = 0

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, request: Request) -> Turn | None:
        with self._lock:
            self.requests.append(request)
            return self._script.pop(0) if self._script else None

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw or b"{}")
                path = self.path
                headers = {k.lower(): v for k, v in self.headers.items()}
                api = _api_of(path)
                if api is None:
                    self._json(404, {"error": {"message": f"no such path {path}"}})
                    return
                turn = server._next(Request(path, headers, body))
                if turn is None:
                    self._json(500, _error_body(api, 500, "fake provider: script exhausted"))
                    return
                if turn.first_delay:
                    time.sleep(turn.first_delay)
                if turn.status != 200:
                    self._json(turn.status, turn.error or _error_body(api, turn.status, "error"))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                events = {
                    "openai-completions": _completions,
                    "openai-responses": _responses,
                    "anthropic-messages": _anthropic,
                    "google-generative-ai": _google,
                }[api](body, turn, path)
                try:
                    for event, data in events:
                        frame = b""
                        if event:
                            frame += f"event: {event}\n".encode()
                        payload = data if isinstance(data, str) else json.dumps(data)
                        frame += b"data: " + payload.encode() + b"\n\n"
                        self.wfile.write(frame)
                        self.wfile.flush()
                        with server._lock:
                            server.frames_sent += 1
                        if turn.delay:
                            time.sleep(turn.delay)
                except (BrokenPipeError, ConnectionResetError):
                    with server._lock:
                        server.disconnects += 1

            def _json(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _api_of(path: str) -> str | None:
    path = path.split("?")[0]
    if path.endswith("/chat/completions"):
        return "openai-completions"
    if path.endswith("/responses"):
        return "openai-responses"
    if path.endswith("/v1/messages"):
        return "anthropic-messages"
    if ":streamGenerateContent" in path:
        return "google-generative-ai"
    return None


def _error_body(api: str, status: int, message: str) -> dict:
    if api == "anthropic-messages":
        kind = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}
        return {
            "type": "error",
            "error": {"type": kind.get(status, "api_error"), "message": message},
        }
    if api == "google-generative-ai":
        names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}
        return {
            "error": {
                "code": status,
                "message": message,
                "status": names.get(status, "UNAVAILABLE"),
            }
        }
    return {"error": {"message": message, "type": "server_error", "code": None}}


def error(api: str, status: int, message: str, **kw) -> Turn:
    return Turn(status=status, error=_error_body(api, status, message), **kw)


def overflow(api: str) -> Turn:
    """Each API's own context-too-long answer."""
    if api == "anthropic-messages":
        return error(api, 400, "prompt is too long: 213462 tokens > 200000 maximum")
    if api == "google-generative-ai":
        return error(
            api,
            400,
            "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).",
        )
    if api == "openai-responses":
        body = {
            "error": {
                "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }
        }
        return Turn(status=400, error=body)
    body = {
        "error": {
            "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 133000 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    return Turn(status=400, error=body)


def _pieces(text: str, size: int):
    for i in range(0, len(text), max(1, size)):
        yield text[i : i + max(1, size)]


def _ids(turn: Turn) -> list[str]:
    return [c.id or f"call_{uuid.uuid4().hex[:10]}" for c in turn.calls]


# --------------------------------------------------------------------------- completions


def _completions(body: dict, turn: Turn, _path: str):
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:10]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model"),
    }

    def chunk(delta, finish=None):
        return None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(turn.thinking, turn.chunk):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(turn.text, turn.chunk):
        yield chunk({"content": piece})
    for index, (call, call_id) in enumerate(zip(turn.calls, _ids(turn), strict=True)):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in _pieces(call.raw, 16):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, turn.stop or ("tool_calls" if turn.calls else "stop"))
    prompt = turn.input + turn.cache_read + turn.cache_write
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": turn.output,
        "total_tokens": prompt + turn.output,
        "prompt_tokens_details": {
            "cached_tokens": turn.cache_read,
            "cache_write_tokens": turn.cache_write,
        },
    }
    yield None, {**base, "choices": [], "usage": usage}
    yield None, "[DONE]"


# --------------------------------------------------------------------------- responses


def _responses(body: dict, turn: Turn, _path: str):
    seq = iter(range(1, 10_000))
    rid = f"resp_{uuid.uuid4().hex[:10]}"

    def ev(kind: str, **data):
        return kind, {"type": kind, "sequence_number": next(seq), **data}

    output: list[dict] = []
    yield ev("response.created", response={"id": rid, "object": "response", "status": "in_progress", "model": body.get("model"), "output": []})  # fmt: skip
    index = 0
    if turn.thinking:
        item_id = f"rs_{uuid.uuid4().hex[:10]}"
        yield ev("response.output_item.added", output_index=index, item={"id": item_id, "type": "reasoning", "summary": []})  # fmt: skip
        yield ev("response.reasoning_summary_part.added", item_id=item_id, output_index=index, summary_index=0, part={"type": "summary_text", "text": ""})  # fmt: skip
        for piece in _pieces(turn.thinking, turn.chunk):
            yield ev("response.reasoning_summary_text.delta", item_id=item_id, output_index=index, summary_index=0, delta=piece)  # fmt: skip
        yield ev("response.reasoning_summary_text.done", item_id=item_id, output_index=index, summary_index=0, text=turn.thinking)  # fmt: skip
        yield ev("response.reasoning_summary_part.done", item_id=item_id, output_index=index, summary_index=0, part={"type": "summary_text", "text": turn.thinking})  # fmt: skip
        item = {"id": item_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": turn.thinking}], "encrypted_content": "enc-" + turn.signature}  # fmt: skip
        yield ev("response.output_item.done", output_index=index, item=item)
        output.append(item)
        index += 1
    if turn.text:
        item_id = f"msg_{uuid.uuid4().hex[:10]}"
        yield ev("response.output_item.added", output_index=index, item={"id": item_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []})  # fmt: skip
        yield ev("response.content_part.added", item_id=item_id, output_index=index, content_index=0, part={"type": "output_text", "text": "", "annotations": []})  # fmt: skip
        for piece in _pieces(turn.text, turn.chunk):
            yield ev("response.output_text.delta", item_id=item_id, output_index=index, content_index=0, delta=piece, logprobs=[])  # fmt: skip
        yield ev("response.output_text.done", item_id=item_id, output_index=index, content_index=0, text=turn.text, logprobs=[])  # fmt: skip
        part = {"type": "output_text", "text": turn.text, "annotations": []}
        yield ev("response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=part)  # fmt: skip
        item = {"id": item_id, "type": "message", "role": "assistant", "status": "completed", "content": [part]}  # fmt: skip
        yield ev("response.output_item.done", output_index=index, item=item)
        output.append(item)
        index += 1
    for call, call_id in zip(turn.calls, _ids(turn), strict=True):
        item_id = f"fc_{uuid.uuid4().hex[:10]}"
        yield ev("response.output_item.added", output_index=index, item={"id": item_id, "type": "function_call", "status": "in_progress", "call_id": call_id, "name": call.name, "arguments": ""})  # fmt: skip
        for piece in _pieces(call.raw, 16):
            yield ev("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece)  # fmt: skip
        yield ev("response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=call.raw)  # fmt: skip
        item = {"id": item_id, "type": "function_call", "status": "completed", "call_id": call_id, "name": call.name, "arguments": call.raw}  # fmt: skip
        yield ev("response.output_item.done", output_index=index, item=item)
        output.append(item)
        index += 1
    status = turn.stop or "completed"
    usage = {
        "input_tokens": turn.input + turn.cache_read + turn.cache_write,
        "input_tokens_details": {
            "cached_tokens": turn.cache_read,
            "cache_write_tokens": turn.cache_write,
        },  # fmt: skip
        "output_tokens": turn.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": turn.input + turn.cache_read + turn.cache_write + turn.output,
    }
    kind = "response.completed" if status == "completed" else "response.incomplete"
    yield ev(kind, response={"id": rid, "object": "response", "status": status, "model": body.get("model"), "output": output, "usage": usage})  # fmt: skip


# --------------------------------------------------------------------------- anthropic


def _anthropic(body: dict, turn: Turn, _path: str):
    def ev(kind: str, **data):
        return kind, {"type": kind, **data}

    usage = {
        "input_tokens": turn.input,
        "output_tokens": 1,
        "cache_read_input_tokens": turn.cache_read,
        "cache_creation_input_tokens": turn.cache_write,
    }
    message = {
        "id": f"msg_{uuid.uuid4().hex[:10]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield ev("message_start", message=message)
    index = 0
    if turn.thinking:
        yield ev("content_block_start", index=index, content_block={"type": "thinking", "thinking": "", "signature": ""})  # fmt: skip
        for piece in _pieces(turn.thinking, turn.chunk):
            yield ev("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})  # fmt: skip
        yield ev("content_block_delta", index=index, delta={"type": "signature_delta", "signature": turn.signature})  # fmt: skip
        yield ev("content_block_stop", index=index)
        index += 1
    if turn.redacted:
        yield ev("content_block_start", index=index, content_block={"type": "redacted_thinking", "data": turn.redacted})  # fmt: skip
        yield ev("content_block_stop", index=index)
        index += 1
    if turn.text:
        yield ev("content_block_start", index=index, content_block={"type": "text", "text": ""})
        for piece in _pieces(turn.text, turn.chunk):
            yield ev("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})  # fmt: skip
        yield ev("content_block_stop", index=index)
        index += 1
    for call, call_id in zip(turn.calls, _ids(turn), strict=True):
        yield ev("content_block_start", index=index, content_block={"type": "tool_use", "id": call_id, "name": call.name, "input": {}})  # fmt: skip
        yield ev("ping")
        for piece in _pieces(call.raw, 16):
            yield ev("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece})  # fmt: skip
        yield ev("content_block_stop", index=index)
        index += 1
    stop = turn.stop or ("tool_use" if turn.calls else "end_turn")
    yield ev("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage={"output_tokens": turn.output})  # fmt: skip
    yield ev("message_stop")


# --------------------------------------------------------------------------- google


def _google(body: dict, turn: Turn, path: str):
    model = path.split("/models/")[1].split(":")[0]

    def chunk(parts, finish=None, usage=None):
        candidate: dict = {"index": 0}
        if parts:
            candidate["content"] = {"parts": parts, "role": "model"}
        if finish:
            candidate["finishReason"] = finish
        data: dict = {"candidates": [candidate], "modelVersion": model, "responseId": "resp-1"}
        if usage:
            data["usageMetadata"] = usage
        return None, data

    pieces = list(_pieces(turn.thinking, turn.chunk))
    for n, piece in enumerate(pieces):
        part: dict = {"text": piece, "thought": True}
        if n == len(pieces) - 1:
            part["thoughtSignature"] = turn.signature
        yield chunk([part])
    for piece in _pieces(turn.text, turn.chunk):
        yield chunk([{"text": piece}])
    for call in turn.calls:
        part = {"functionCall": {"name": call.name, "args": json.loads(call.raw)}}
        if call.id:
            part["functionCall"]["id"] = call.id
        part["thoughtSignature"] = base64.b64encode(b"call-signature").decode()
        yield chunk([part])
    usage = {
        "promptTokenCount": turn.input + turn.cache_read,
        "candidatesTokenCount": turn.output,
        "totalTokenCount": turn.input + turn.cache_read + turn.output,
        "cachedContentTokenCount": turn.cache_read,
    }
    yield chunk([], turn.stop or "STOP", usage)
