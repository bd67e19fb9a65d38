"""A scripted OpenAI-compatible chat-completions server on loopback.

Tests push the replies they want, in order; each POST to /v1/chat/completions takes
the next one. It speaks the real wire protocol (JSON, or SSE when the request asks
for `stream`), so the code under test goes through the real `openai` SDK. Every
request body is recorded for assertions. An empty script answers 500 so a test that
makes an unexpected call fails loudly.
"""

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    text: str = ""
    thinking: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict | None = None
    status: int = 200
    error: dict | None = None
    delay_before: float = 0.0
    delay_between_chunks: float = 0.0
    chunk_size: int = 8
    hang: float = 0.0


def user_text(message: dict) -> str:
    """The text of a recorded chat message, whether its content is a string or a list of
    text parts (pi sends a summary request's prompt as one text part)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if p.get("type") == "text")


def text(content: str, *, usage: dict | None = None, **kw) -> Reply:
    return Reply(text=content, usage=usage, **kw)


def tool_call(name: str, arguments, *, text: str = "", call_id: str | None = None, **kw) -> Reply:
    """One tool call; `arguments` may be a dict or a raw (possibly invalid) JSON string."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Reply(
        text=text,
        tool_calls=[
            {"id": call_id or f"call_{uuid.uuid4().hex[:12]}", "name": name, "arguments": raw}
        ],
        **kw,
    )


def tool_calls(calls: list[tuple[str, dict]], *, text: str = "", **kw) -> Reply:
    return Reply(
        text=text,
        tool_calls=[
            {"id": f"call_{uuid.uuid4().hex[:12]}", "name": n, "arguments": json.dumps(a)}
            for n, a in calls
        ],
        **kw,
    )


def error(
    status: int,
    message: str = "scripted error",
    *,
    code: str | None = None,
    type_: str = "server_error",
) -> Reply:
    return Reply(status=status, error={"message": message, "type": type_, "code": code})


def context_overflow(window: int = 128000) -> Reply:
    return error(
        400,
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {window + 5000} tokens. Please reduce the length of the messages.",
        code="context_length_exceeded",
        type_="invalid_request_error",
    )


def last_text(body: dict) -> str:
    """The text of a request's last message (a string, or text parts as pi sends them)."""
    content = body["messages"][-1]["content"]
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if part.get("type") == "text")
    return content


def hang(seconds: float) -> Reply:
    return Reply(hang=seconds)


class ScriptedLLM:
    def __init__(self, model: str = "scripted-model"):
        self.model = model
        self._script: list[Reply] = []
        self._routes: dict[str, list[Reply]] = {}
        self._lock = threading.Lock()
        self.requests: list[dict] = []
        self.authorizations: list[str | None] = []  # each request's Authorization header
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._routes.clear()
            self.requests.clear()
            self.authorizations.clear()

    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def push_for(self, marker: str, *replies: Reply) -> None:
        """Replies for the requests whose messages contain `marker` (in any order with the
        others: runs at once, each its own script), ahead of the common script."""
        with self._lock:
            self._routes.setdefault(marker, []).extend(replies)

    def _next(self, body: dict, authorization: str | None = None) -> Reply | None:
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            seen = json.dumps(body.get("messages") or [])
            for marker, replies in self._routes.items():
                if replies and marker in seen:
                    return replies.pop(0)
            return self._script.pop(0) if self._script else None

    def _handler_class(self):
        return type("Handler", (_Handler,), {"llm": self})

    def _usage(self, body: dict, reply: Reply) -> dict:
        if reply.usage is not None:
            return reply.usage
        prompt = sum(len(json.dumps(m)) for m in body.get("messages", [])) // 4
        completion = max(1, len(reply.text) // 4) + 10 * len(reply.tool_calls)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _finish(self, reply: Reply) -> str:
        return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")

    def _completion(self, body: dict, reply: Reply) -> dict:
        message = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in reply.tool_calls
            ]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish(reply)}],
            "usage": self._usage(body, reply),
        }

    def _chunks(self, body: dict, reply: Reply):
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", self.model),
        }

        def chunk(delta, finish=None):
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": ""})
        step = max(1, reply.chunk_size)
        for i in range(0, len(reply.thinking), step):
            yield chunk({"reasoning_content": reply.thinking[i : i + step]})
        for i in range(0, len(reply.text), step):
            yield chunk({"content": reply.text[i : i + step]})
        for index, call in enumerate(reply.tool_calls):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["name"], "arguments": ""},
                        }
                    ]
                }
            )
            args = call["arguments"]
            for i in range(0, len(args), 16):
                yield chunk(
                    {"tool_calls": [{"index": index, "function": {"arguments": args[i : i + 16]}}]}
                )
        yield chunk({}, self._finish(reply))
        if (body.get("stream_options") or {}).get("include_usage"):
            yield {**base, "choices": [], "usage": self._usage(body, reply)}


class _Handler(BaseHTTPRequestHandler):
    """The HTTP side of a ScriptedLLM (its `llm`, set per server by _handler_class)."""

    llm: "ScriptedLLM"

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": self.llm.model, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": "not found"}})
            return
        reply = self.llm._next(body, self.headers.get("Authorization"))
        if reply is None:
            self._json(
                500,
                {
                    "error": {
                        "message": "scripted LLM: script exhausted",
                        "type": "server_error",
                        "code": None,
                    }
                },
            )
            return
        if reply.hang:
            time.sleep(reply.hang)
            self.close_connection = True
            return
        if reply.delay_before:
            time.sleep(reply.delay_before)
        if reply.status != 200:
            self._json(reply.status, {"error": reply.error or {"message": "error"}})
            return
        if body.get("stream"):
            self._stream(body, reply)
        else:
            self._json(200, self.llm._completion(body, reply))

    def _json(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, body, reply):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for chunk in self.llm._chunks(body, reply):
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
                if reply.delay_between_chunks:
                    time.sleep(reply.delay_between_chunks)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client aborted the stream
