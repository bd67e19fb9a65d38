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

import base64
import itertools
import re
import time
from typing import Any

import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from .base import ModelRequest, ProviderError, ResolvedModel
from .common import (
    Pump,
    base_max_tokens,
    classify,
    clean,
    content_list,
    fail,
    finish,
    new_message,
    reasoning_level,
    request_headers,
    require_key,
    ssl_context,
    transform_messages,
)

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


def _signature(same: bool, signature: Any) -> bytes | None:
    """A signature to send back: bytes for the SDK (it base64-encodes them again)."""
    if same and _valid_signature(signature):
        return base64.b64decode(signature)
    return None


def convert_contents(model: dict[str, Any], messages: list[dict]) -> list[dict[str, Any]]:
    model_id = model.get("id", "")
    include_id = _needs_call_id(model_id)

    def normalize(call_id: str, _source: dict) -> str:
        return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:64] if include_id else call_id

    vision = "image" in (model.get("input") or ["text"])
    out: list[dict[str, Any]] = []
    for msg in transform_messages(messages, model, normalize):
        role = msg.get("role")
        if role == "user":
            content = msg.get("content")
            if isinstance(content, str):
                out.append({"role": "user", "parts": [{"text": clean(content)}]})
            else:
                parts = []
                for item in content_list(content):
                    if item.get("type") == "text":
                        parts.append({"text": clean(item.get("text", ""))})
                    else:
                        parts.append(_inline(item))
                if parts:
                    out.append({"role": "user", "parts": parts})
        elif role == "assistant":
            same = msg.get("provider") == model.get("provider") and msg.get("model") == model_id
            parts = []
            for block in msg.get("content") or []:
                kind = block.get("type")
                if kind == "text":
                    if not (block.get("text") or "").strip():
                        continue
                    part: dict[str, Any] = {"text": clean(block["text"])}
                    sig = _signature(same, block.get("textSignature"))
                    if sig:
                        part["thought_signature"] = sig
                    parts.append(part)
                elif kind == "thinking":
                    if not (block.get("thinking") or "").strip():
                        continue
                    if same:
                        part = {"thought": True, "text": clean(block["thinking"])}
                        sig = _signature(same, block.get("thinkingSignature"))
                        if sig:
                            part["thought_signature"] = sig
                    else:
                        part = {"text": clean(block["thinking"])}
                    parts.append(part)
                elif kind == "toolCall":
                    call: dict[str, Any] = {
                        "name": block.get("name"),
                        "args": block.get("arguments") or {},
                    }
                    if include_id:
                        call["id"] = block.get("id")
                    part = {"function_call": call}
                    sig = _signature(same, block.get("thoughtSignature"))
                    if sig:
                        part["thought_signature"] = sig
                    parts.append(part)
            if parts:
                out.append({"role": "model", "parts": parts})
        elif role == "toolResult":
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
            part = {"function_response": response}
            last = out[-1] if out else None
            if (
                last is not None
                and last["role"] == "user"
                and any("function_response" in p for p in last["parts"])
            ):
                last["parts"].append(part)
            else:
                out.append({"role": "user", "parts": [part]})
            if images and not _multimodal_function_response(model_id):
                out.append(
                    {"role": "user", "parts": [{"text": "Tool result image:"}, *image_parts]}
                )
    return out


def _inline(block: dict) -> dict[str, Any]:
    return {"inline_data": {"mime_type": block.get("mimeType"), "data": block.get("data")}}


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
        return custom[effort]
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
            return {"thinking_level": "LOW"}
        if _is_gemini3_flash(model_id) or _is_gemma4(model_id):
            return {"thinking_level": "MINIMAL"}
        return {"thinking_budget": 0}
    effort = "high" if level in ("xhigh", "max") else level
    if _is_gemini3_pro(model_id) or _is_gemini3_flash(model_id) or _is_gemma4(model_id):
        return {"include_thoughts": True, "thinking_level": _level(effort, model_id)}
    return {"include_thoughts": True, "thinking_budget": _budget(model, effort)}


def build_config(resolved: ResolvedModel, request: ModelRequest) -> dict[str, Any]:
    """``GenerateContentConfig`` as pi builds it (in the SDK's snake_case)."""
    config: dict[str, Any] = {}
    max_tokens = base_max_tokens(request)
    if max_tokens is not None:
        config["max_output_tokens"] = max_tokens
    if request.system_prompt:
        config["system_instruction"] = clean(request.system_prompt)
    if request.tools:
        config["tools"] = [
            {
                "function_declarations": [
                    {
                        "name": tool["name"],
                        "description": tool.get("description", ""),
                        "parameters_json_schema": tool.get("parameters") or {},
                    }
                    for tool in request.tools
                ]
            }
        ]
    thinking = _thinking_config(resolved, request)
    if thinking is not None:
        config["thinking_config"] = thinking
    return config


def _error(exc: BaseException, provider: str) -> ProviderError:
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, genai_errors.APIError):
        code = exc.code if isinstance(exc.code, int) else None
        text = f"{code} {exc.message or exc.status or ''}".strip()
        retry_after = None
        response = getattr(exc, "response", None)
        try:
            value = response.headers.get("retry-after") if response is not None else None
            retry_after = float(value) if value is not None else None
        except (AttributeError, TypeError, ValueError):
            retry_after = None
        return classify(provider, text, code, retry_after=retry_after)
    if isinstance(exc, httpx2.TimeoutException):
        return classify(provider, "Request timed out.", None, connection=True)
    if isinstance(exc, httpx2.TransportError):
        return classify(provider, f"Connection error: {exc}", None, connection=True)
    return ProviderError(f"{exc.__class__.__name__}: {exc}", kind="other")


def stream(
    resolved: ResolvedModel,
    request: ModelRequest,
    *,
    abort=None,
    on_delta=None,
    on_idle=None,
) -> dict[str, Any]:
    message = new_message(resolved)
    pump = Pump(abort, on_idle)
    try:
        headers = request_headers(resolved)
        if not resolved.api_key:
            raise ProviderError(
                f"No API key for provider {resolved.provider}: add one on the Models page or "
                "in the server's configuration.",
                kind="auth",
            )
        key = require_key(resolved, headers)
        # Built as the SDK's own types, which it sends in the API's camelCase.
        contents = [
            types.Content.model_validate(c)
            for c in convert_contents(resolved.model, request.messages)
        ]
        config = types.GenerateContentConfig.model_validate(build_config(resolved, request))
    except ProviderError as exc:
        raise fail(message, exc, False) from None
    # A client per request around its own HTTP client (the TLS context is shared, so it
    # is cheap): abort closes that HTTP client, which ends the stream at once.
    http = httpx2.Client(verify=ssl_context(), timeout=resolved.timeout)
    options: dict[str, Any] = {"httpx_client": http, "timeout": int(resolved.timeout * 1000)}
    if resolved.model.get("baseUrl"):
        options.update(base_url=resolved.model["baseUrl"], api_version="")
    if headers:
        options["headers"] = headers
    state = _State(message, on_delta)

    def open_stream():
        client = genai.Client(api_key=key, http_options=types.HttpOptions(**options))
        return client.models.generate_content_stream(
            model=resolved.model_id, contents=contents, config=config
        )

    try:
        status = pump.run(open_stream, state.feed, close=lambda _stream: http.close())
    except BaseException as exc:
        raise fail(message, _error(exc, resolved.provider), pump.received) from None
    finally:
        state.close_block()
        http.close()
    if status == "aborted":
        return finish(message, "aborted")
    if state.error is not None:
        raise fail(message, ProviderError(state.error, kind="other"), True)
    return finish(message, "done")


STOP = {"STOP": "stop", "MAX_TOKENS": "length"}


def _b64(value: Any) -> str | None:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    return value if isinstance(value, str) and value else None


class _State:
    def __init__(self, message: dict, on_delta):
        self.message = message
        self.on_delta = on_delta
        self.current: dict | None = None
        self.error: str | None = None

    def close_block(self) -> None:
        self.current = None

    def feed(self, chunk: Any) -> None:
        candidates = chunk.candidates or []
        candidate = candidates[0] if candidates else None
        content = candidate.content if candidate is not None else None
        for part in (content.parts if content is not None else None) or []:
            if part.text is not None:
                thinking = part.thought is True
                kind = "thinking" if thinking else "text"
                if self.current is None or self.current["type"] != kind:
                    if thinking:
                        self.current = {
                            "type": "thinking",
                            "thinking": "",
                            "thinkingSignature": None,
                        }
                    else:
                        self.current = {"type": "text", "text": ""}
                    self.message["content"].append(self.current)
                signature = _b64(part.thought_signature)
                if thinking:
                    self.current["thinking"] += part.text
                    if signature:
                        self.current["thinkingSignature"] = signature
                else:
                    self.current["text"] += part.text
                    if signature:
                        self.current["textSignature"] = signature
                if self.on_delta and part.text:
                    self.on_delta(kind, part.text)
            if part.function_call is not None:
                self.current = None
                call = part.function_call
                provided = call.id
                taken = any(
                    b["type"] == "toolCall" and b["id"] == provided for b in self.message["content"]
                )
                call_id = (
                    f"{call.name}_{int(time.time() * 1000)}_{next(_counter)}"
                    if not provided or taken
                    else provided
                )
                block: dict[str, Any] = {
                    "type": "toolCall",
                    "id": call_id,
                    "name": call.name or "",
                    "arguments": dict(call.args or {}),
                }
                signature = _b64(part.thought_signature)
                if signature:
                    block["thoughtSignature"] = signature
                self.message["content"].append(block)
        if candidate is not None and candidate.finish_reason:
            reason = str(getattr(candidate.finish_reason, "value", candidate.finish_reason))
            self.message["stopReason"] = STOP.get(reason, "error")
            if self.message["stopReason"] == "error":
                self.error = f"Provider finish reason: {reason}"
            if any(b["type"] == "toolCall" for b in self.message["content"]):
                self.message["stopReason"] = "toolUse"
                self.error = None
        usage = chunk.usage_metadata
        if usage is not None:
            prompt = usage.prompt_token_count or 0
            cached = usage.cached_content_token_count or 0
            self.message["usage"] = {
                "input": prompt - cached,
                "output": (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0),
                "cacheRead": cached,
                "cacheWrite": 0,
                "totalTokens": usage.total_token_count or 0,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            }
