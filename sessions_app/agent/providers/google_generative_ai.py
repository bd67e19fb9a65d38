"""Google Generative AI (``google-generative-ai``) through the ``google-genai`` SDK.

Shaped as pi-ai 0.80.2 shapes it: ``POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse``
(the base URL carries the version, as in pi's catalog); the system prompt as
``systemInstruction``; assistant turns as ``model`` contents whose thinking parts carry
``thought: true`` and their ``thoughtSignature`` (kept only for the same provider and
model, and only when it is valid base64); tool results as ``functionResponse`` parts
(``output``, or ``error`` for a failed call), consecutive ones in one user turn; tools as
``functionDeclarations`` with ``parametersJsonSchema``; thinking as
``thinkingConfig`` (a level for Gemini 3 and Gemma 4, a token budget for 2.5 models,
``thinkingBudget: 0`` or the lowest level when off); ``maxOutputTokens`` only when the
caller gives a budget.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from .base import DeltaSink, ModelRequest, ProviderError, ResolvedModel
from .conversion import clean, content_list, transform_messages, user_blocks
from .errors import classify, header_retry_after
from .streaming import Connection, StreamAssembly, api_stream, usage_of
from .thinking import base_max_tokens, reasoning_level
from .transport import request_headers, require_key, ssl_context

API = "google-generative-ai"
_counter = itertools.count(1)
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


def _valid_signature(signature: Any) -> bool:
    return isinstance(signature, str) and len(signature) % 4 == 0 and bool(_BASE64.match(signature))


def _needs_call_id(model_id: str) -> bool:
    return model_id.startswith("claude-") or model_id.startswith("gpt-oss-")


def _gemini_major(model_id: str) -> int | None:
    match = re.match(r"^gemini(?:-live)?-(\d+)", model_id.lower())
    return int(match.group(1)) if match else None


def _multimodal_function_response(model_id: str) -> bool:
    major = _gemini_major(model_id)
    return major is None or major >= 3


def _signature(same: bool, signature: Any) -> str | None:
    """A signature to send back: only the same provider and model's, valid base64."""
    return signature if same and _valid_signature(signature) else None


def convert_contents(model: dict[str, Any], messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    include_id = _needs_call_id(model.get("id", ""))

    def normalize(call_id: str, _source: dict[str, Any]) -> str:
        return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:64] if include_id else call_id

    out: list[dict[str, Any]] = []
    for msg in transform_messages(messages, model, normalize):
        role = msg.get("role")
        if role == "user":
            parts = _user_parts(msg.get("content"))
            if parts:
                out.append({"parts": parts, "role": "user"})
        elif role == "assistant":
            parts = _model_parts(model, msg, include_id)
            if parts:
                out.append({"parts": parts, "role": "model"})
        elif role == "toolResult":
            _add_tool_result(model, msg, include_id, out)
    return out


def _user_parts(content: Any) -> list[dict[str, Any]]:
    return user_blocks(content, lambda text: {"text": text}, _inline)


def _model_parts(
    model: dict[str, Any], msg: dict[str, Any], include_id: bool
) -> list[dict[str, Any]]:
    """An assistant turn's parts; signatures only go back to the model that made them."""
    same = msg.get("provider") == model.get("provider") and msg.get("model") == model.get("id", "")
    parts = []
    for block in msg.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            if not (block.get("text") or "").strip():
                continue
            part: dict[str, Any] = {"text": clean(block["text"])}
            signature = block.get("textSignature")
        elif kind == "thinking":
            if not (block.get("thinking") or "").strip():
                continue
            if not same:
                parts.append({"text": clean(block["thinking"])})
                continue
            part = {"text": clean(block["thinking"]), "thought": True}
            signature = block.get("thinkingSignature")
        elif kind == "toolCall":
            call: dict[str, Any] = {"args": block.get("arguments") or {}}
            if include_id:
                call["id"] = block.get("id")
            call["name"] = block.get("name")
            part = {"functionCall": call}
            signature = block.get("thoughtSignature")
        else:
            continue
        sig = _signature(same, signature)
        if sig:
            part["thoughtSignature"] = sig
        parts.append(part)
    return parts


def _add_tool_result(
    model: dict[str, Any], msg: dict[str, Any], include_id: bool, out: list[dict[str, Any]]
) -> None:
    """A ``functionResponse`` part, in the user turn of the results before it if there
    is one; images in the response (Gemini 3 on) or in a user turn after it."""
    model_id = model.get("id", "")
    vision = "image" in (model.get("input") or ["text"])
    blocks = content_list(msg.get("content"))
    text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    images = [b for b in blocks if b.get("type") == "image"] if vision else []
    value = clean(text) if text else ("(see attached image)" if images else "")
    response: dict[str, Any] = {
        "name": msg.get("toolName"),
        "response": {"error": value} if msg.get("isError") else {"output": value},
    }
    image_parts = [_inline(b) for b in images]
    if images and _multimodal_function_response(model_id):
        response["parts"] = image_parts
    if include_id:
        response["id"] = msg.get("toolCallId")
    part = {"functionResponse": response}
    last = out[-1] if out else None
    if (
        last is not None
        and last["role"] == "user"
        and any("functionResponse" in p for p in last["parts"])
    ):
        last["parts"].append(part)
    else:
        out.append({"parts": [part], "role": "user"})
    if images and not _multimodal_function_response(model_id):
        out.append({"role": "user", "parts": [{"text": "Tool result image:"}, *image_parts]})


def _inline(block: dict[str, Any]) -> dict[str, Any]:
    return {"inlineData": {"mimeType": block.get("mimeType"), "data": block.get("data")}}


def _is_gemini3_pro(model_id: str) -> bool:
    return bool(re.search(r"gemini-3(?:\.\d+)?-pro", model_id.lower()))


def _is_gemini3_flash(model_id: str) -> bool:
    lowered = model_id.lower()
    return bool(re.search(r"gemini-3(?:\.\d+)?-flash", lowered)) or lowered in (
        "gemini-flash-latest",
        "gemini-flash-lite-latest",
    )


def _is_gemma4(model_id: str) -> bool:
    return bool(re.search(r"gemma-?4", model_id.lower()))


def _level(effort: str, model_id: str) -> str:
    if _is_gemini3_pro(model_id):
        return "LOW" if effort in ("minimal", "low") else "HIGH"
    if _is_gemma4(model_id):
        return "MINIMAL" if effort in ("minimal", "low") else "HIGH"
    return {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH"}[effort]


def _budget(model: dict[str, Any], effort: str) -> int:
    custom = model.get("thinkingBudgets") or {}
    if effort in custom:
        budget: int = custom[effort]  # (models.json: a number of tokens)
        return budget
    model_id = model.get("id", "")
    if "2.5-pro" in model_id:
        return {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768}[effort]
    if "2.5-flash-lite" in model_id:
        return {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576}[effort]
    if "2.5-flash" in model_id:
        return {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576}[effort]
    return -1


def _thinking_config(resolved: ResolvedModel, request: ModelRequest) -> dict[str, Any] | None:
    model = resolved.model
    if not model.get("reasoning"):
        return None
    level = reasoning_level(resolved, request)
    model_id = model.get("id", "")
    if level is None:
        if _is_gemini3_pro(model_id):
            return {"thinkingLevel": "LOW"}
        if _is_gemini3_flash(model_id) or _is_gemma4(model_id):
            return {"thinkingLevel": "MINIMAL"}
        return {"thinkingBudget": 0}
    effort = "high" if level in ("xhigh", "max") else level
    if _is_gemini3_pro(model_id) or _is_gemini3_flash(model_id) or _is_gemma4(model_id):
        return {"includeThoughts": True, "thinkingLevel": _level(effort, model_id)}
    return {"includeThoughts": True, "thinkingBudget": _budget(model, effort)}


def build_params(resolved: ResolvedModel, request: ModelRequest) -> dict[str, Any]:
    """The REST body of ``streamGenerateContent``, as pi's SDK sends it (its keys, in
    its order)."""
    body: dict[str, Any] = {"contents": convert_contents(resolved.model, request.messages)}
    if request.system_prompt:
        body["systemInstruction"] = {
            "parts": [{"text": clean(request.system_prompt)}],
            "role": "user",
        }
    if request.tools:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": tool["name"],
                        "description": tool.get("description", ""),
                        "parametersJsonSchema": tool.get("parameters") or {},
                    }
                    for tool in request.tools
                ]
            }
        ]
    generation: dict[str, Any] = {}
    max_tokens = base_max_tokens(request)
    if max_tokens is not None:
        generation["maxOutputTokens"] = max_tokens
    thinking = _thinking_config(resolved, request)
    if thinking is not None:
        generation["thinkingConfig"] = thinking
    if generation:
        body["generationConfig"] = generation
    return body


def _error(exc: BaseException, provider: str) -> ProviderError:
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, genai_errors.APIError):
        code = exc.code if isinstance(exc.code, int) else None
        text = f"{code} {exc.message or exc.status or ''}".strip()
        retry_after = header_retry_after(getattr(exc, "response", None))
        return classify(provider, text, code, retry_after=retry_after)
    if isinstance(exc, httpx2.TimeoutException):
        return classify(provider, "Request timed out.", None, connection=True)
    if isinstance(exc, httpx2.TransportError):
        return classify(provider, f"Connection error: {exc}", None, connection=True)
    return ProviderError(f"{exc.__class__.__name__}: {exc}", kind="other")


def _opener(resolved: ResolvedModel, request: ModelRequest) -> Connection:
    """What opens the request's stream (raises ProviderError before any is sent). A client
    per request around its own HTTP client (the TLS context is shared, so it is cheap):
    abort closes that HTTP client, which ends the stream at once."""
    headers = request_headers(resolved)
    if not resolved.api_key:
        raise ProviderError(
            f"No API key for provider {resolved.provider}: add one on the Models page or "
            "in the server's configuration.",
            kind="auth",
        )
    key = require_key(resolved, headers)
    body = build_params(resolved, request)
    tls = ssl_context()
    http = httpx2.Client(verify=tls, timeout=resolved.timeout)
    options: dict[str, Any] = {
        "httpx_client": http,
        # given, so that the SDK does not load the CA bundle again for each client
        "client_args": {"verify": tls},
        "async_client_args": {"verify": tls, "ssl": tls},
        "timeout": int(resolved.timeout * 1000),
    }
    if resolved.model.get("baseUrl"):
        options.update(base_url=resolved.model["baseUrl"], api_version="")
    if headers:
        options["headers"] = headers

    def open_stream() -> Iterator[dict[str, Any]]:
        # The SDK's own client sends the body (its auth header, URL building, SSE
        # reading and errors); the body is built here, as pi's SDK would build it: the
        # SDK's typed conversion would send some keys in snake_case and costs ~40 ms
        # per request for a long conversation.
        client = genai.Client(api_key=key, http_options=types.HttpOptions(**options))
        path = f"models/{resolved.model_id}:streamGenerateContent?alt=sse"
        return (
            json.loads(chunk.body) if chunk.body else {}
            for chunk in client._api_client.request_streamed("post", path, body)
        )

    return Connection(open_stream, close=lambda _stream: http.close(), release=http.close)


STOP = {"STOP": "stop", "MAX_TOKENS": "length"}


class _State(StreamAssembly):
    def __init__(self, message: dict[str, Any], on_delta: DeltaSink | None):
        super().__init__(message, on_delta)
        self.current: dict[str, Any] | None = None

    def finalize(self) -> None:
        self.current = None  # Gemini's calls come whole: no argument text to parse

    def feed(self, chunk: dict[str, Any]) -> None:
        candidates = chunk.get("candidates") or []
        candidate = candidates[0] if candidates else {}
        for part in (candidate.get("content") or {}).get("parts") or []:
            if part.get("text") is not None:
                self._text(part)
            if part.get("functionCall") is not None:
                self._call(part)
        reason = candidate.get("finishReason")
        if reason:
            self.message["stopReason"] = STOP.get(reason, "error")
            if self.message["stopReason"] == "error":
                self.error = f"Provider finish reason: {reason}"
            if any(b["type"] == "toolCall" for b in self.message["content"]):
                self.message["stopReason"] = "toolUse"
                self.error = None
        usage = chunk.get("usageMetadata")
        if usage is not None:
            prompt = usage.get("promptTokenCount") or 0
            cached = usage.get("cachedContentTokenCount") or 0
            self.message["usage"] = usage_of(
                prompt - cached,
                (usage.get("candidatesTokenCount") or 0) + (usage.get("thoughtsTokenCount") or 0),
                cached,
                0,
                total=usage.get("totalTokenCount") or 0,
            )

    def _text(self, part: dict[str, Any]) -> None:
        """Text or thought text: a new block whenever the kind changes."""
        kind = "thinking" if part.get("thought") is True else "text"
        if self.current is None or self.current["type"] != kind:
            if kind == "thinking":
                block = {"type": "thinking", "thinking": "", "thinkingSignature": None}
            else:
                block = {"type": "text", "text": ""}
            self.current = self.add_block(block)
        signature = part.get("thoughtSignature")
        if signature:
            self.current["thinkingSignature" if kind == "thinking" else "textSignature"] = signature
        self.append(self.current, kind, part["text"])

    def _call(self, part: dict[str, Any]) -> None:
        call = part["functionCall"]
        self.current = None
        provided = call.get("id")
        taken = any(
            b["type"] == "toolCall" and b["id"] == provided for b in self.message["content"]
        )
        call_id = (
            f"{call.get('name')}_{int(time.time() * 1000)}_{next(_counter)}"
            if not provided or taken
            else provided
        )
        block: dict[str, Any] = {
            "type": "toolCall",
            "id": call_id,
            "name": call.get("name") or "",
            "arguments": call.get("args") or {},
        }
        if part.get("thoughtSignature"):
            block["thoughtSignature"] = part["thoughtSignature"]
        self.add_block(block)


# What providers.stream_for hands out for this API.
stream = api_stream(_State, _opener, lambda exc, resolved: _error(exc, resolved.provider))
