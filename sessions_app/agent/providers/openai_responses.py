"""OpenAI Responses (``openai-responses``) through the ``openai`` SDK.

Shaped as pi-ai 0.80.2 shapes it: body keys ``model, input, stream, prompt_cache_key,
store, tools, reasoning, include``; no ``instructions``: the system prompt is
``input[0]`` with role ``developer`` (``system`` for non-reasoning models or
``compat.supportsDeveloperRole: false``); reasoning items replayed verbatim as received
(kept as the thinking block's signature), assistant text as ``message`` items with the
id they came with, function calls with compact JSON arguments and pi's ``call_id|fc_id``
tool-call ids; ``store: false``; ``prompt_cache_key`` and the ``session_id`` /
``x-client-request-id`` headers from the session id; ``max_output_tokens`` only when the
caller gives a budget. Stream events are read as the raw JSON the server sent, so a
reasoning item is replayed key for key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

import openai
from openai.types.responses import Response

from .base import DeltaSink, ModelRequest, ProviderError, ResolvedModel
from .conversion import clean, content_list, transform_messages, user_blocks
from .errors import classify
from .openai_completions import openai_client
from .openai_errors import from_sdk
from .streaming import StreamAssembly, api_stream, usage_of
from .thinking import base_max_tokens, reasoning_level
from .transport import cache_retention, post_stream, request_headers

API = "openai-responses"
TOOL_CALL_PROVIDERS = {"openai", "openai-codex", "opencode"}


def _imul(a: int, b: int) -> int:
    return ((a & 0xFFFFFFFF) * (b & 0xFFFFFFFF)) & 0xFFFFFFFF


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def short_hash(text: str) -> str:
    """pi's shortHash (a 64-bit mix of the UTF-16 code units, base 36)."""
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        ch = units[i] | (units[i + 1] << 8)
        h1 = _imul(h1 ^ ch, 2654435761)
        h2 = _imul(h2 ^ ch, 1597334677)
    h1 = _imul(h1 ^ (h1 >> 16), 2246822507) ^ _imul(h2 ^ (h2 >> 13), 3266489909)
    h2 = _imul(h2 ^ (h2 >> 16), 2246822507) ^ _imul(h1 ^ (h1 >> 13), 3266489909)
    return _base36(h2 & 0xFFFFFFFF) + _base36(h1 & 0xFFFFFFFF)


def _id_part(part: str) -> str:
    return re.sub(r"_+$", "", re.sub(r"[^a-zA-Z0-9_-]", "_", part)[:64])


def _normalizer(model: dict[str, Any]) -> Callable[[str, dict[str, Any]], str]:
    def normalize(call_id: str, source: dict[str, Any]) -> str:
        if model.get("provider") not in TOOL_CALL_PROVIDERS or "|" not in call_id:
            return _id_part(call_id)
        call, item = call_id.split("|")[:2]
        foreign = source.get("provider") != model.get("provider") or source.get("api") != model.get(
            "api"
        )
        item_id = f"fc_{short_hash(item)}"[:64] if foreign else _id_part(item)
        if not item_id.startswith("fc_"):
            item_id = _id_part(f"fc_{item_id}")
        return f"{_id_part(call)}|{item_id}"

    return normalize


def _text_signature(signature: str | None) -> dict[str, Any] | None:
    if not signature:
        return None
    if signature.startswith("{"):
        try:
            parsed = json.loads(signature)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("v") == 1 and isinstance(parsed.get("id"), str):
            out = {"id": parsed["id"]}
            if parsed.get("phase") in ("commentary", "final_answer"):
                out["phase"] = parsed["phase"]
            return out
    return {"id": signature}


def convert_input(
    model: dict[str, Any], system_prompt: str, messages: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    transformed = transform_messages(messages, model, _normalizer(model))
    if system_prompt:
        developer = (
            model.get("reasoning")
            and (model.get("compat") or {}).get("supportsDeveloperRole") is not False
        )
        out.append(
            {"role": "developer" if developer else "system", "content": clean(system_prompt)}
        )
    for index, msg in enumerate(transformed):
        role = msg.get("role")
        if role == "user":
            user = _user_item(msg)
            if user is not None:
                out.append(user)
        elif role == "assistant":
            out.extend(_assistant_items(model, msg, index))
        elif role == "toolResult":
            out.append(_tool_output(model, msg))
    return out


def _user_item(msg: dict[str, Any]) -> dict[str, Any] | None:
    parts = user_blocks(
        msg.get("content"), lambda text: {"type": "input_text", "text": text}, _image
    )
    return {"role": "user", "content": parts} if parts else None


def _assistant_items(
    model: dict[str, Any], msg: dict[str, Any], index: int
) -> list[dict[str, Any]]:
    """Reasoning items replayed as received, text as ``message`` items, calls as
    ``function_call`` items; ``index`` is the message's place (for fallback ids)."""
    items: list[dict[str, Any]] = []
    different = (
        msg.get("model") != model.get("id")
        and msg.get("provider") == model.get("provider")
        and msg.get("api") == model.get("api")
    )
    text_index = 0
    for block in msg.get("content") or []:
        kind = block.get("type")
        if kind == "thinking":
            if block.get("thinkingSignature"):
                items.append(json.loads(block["thinkingSignature"]))
        elif kind == "text":
            fallback = f"msg_pi_{index}" if text_index == 0 else f"msg_pi_{index}_{text_index}"
            text_index += 1
            items.append(_text_item(block, fallback))
        elif kind == "toolCall":
            items.append(_call_item(block, different))
    return items


def _text_item(block: dict[str, Any], fallback_id: str) -> dict[str, Any]:
    signature = _text_signature(block.get("textSignature"))
    msg_id = (signature or {}).get("id") or fallback_id
    if len(msg_id) > 64:
        msg_id = f"msg_{short_hash(msg_id)}"
    item = {
        "type": "message",
        "role": "assistant",
        "content": [
            {
                "type": "output_text",
                "text": clean(block.get("text", "")),
                "annotations": [],
            }
        ],
        "status": "completed",
        "id": msg_id,
    }
    if signature and signature.get("phase"):
        item["phase"] = signature["phase"]
    return item


def _call_item(block: dict[str, Any], different_model: bool) -> dict[str, Any]:
    """A call with pi's ``call_id|item_id`` id split; another model's ``fc_`` item id is
    not sent."""
    parts = (block.get("id") or "").split("|")
    call_id, item_id = parts[0], (parts[1] if len(parts) > 1 else None)
    if different_model and item_id and item_id.startswith("fc_"):
        item_id = None
    call: dict[str, Any] = {"type": "function_call"}
    if item_id is not None:
        call["id"] = item_id
    call.update(
        call_id=call_id,
        name=block.get("name"),
        arguments=json.dumps(
            block.get("arguments") or {}, separators=(",", ":"), ensure_ascii=False
        ),
    )
    return call


def _tool_output(model: dict[str, Any], msg: dict[str, Any]) -> dict[str, Any]:
    vision = "image" in (model.get("input") or ["text"])
    blocks = content_list(msg.get("content"))
    text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    images = [b for b in blocks if b.get("type") == "image"]
    call_id = (msg.get("toolCallId") or "").split("|")[0]
    if images and vision:
        output: Any = []
        if text:
            output.append({"type": "input_text", "text": clean(text)})
        output.extend(_image(b) for b in images)
    else:
        output = clean(text if text else "(see attached image)")
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def _image(block: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "input_image",
        "detail": "auto",
        "image_url": f"data:{block.get('mimeType')};base64,{block.get('data')}",
    }


def build_params(resolved: ResolvedModel, request: ModelRequest) -> dict[str, Any]:
    model = resolved.model
    compat = model.get("compat") or {}
    retention = cache_retention()
    params: dict[str, Any] = {
        "model": model["id"],
        "input": convert_input(model, request.system_prompt, request.messages),
        "stream": True,
    }
    if request.session_id:
        params["prompt_cache_key"] = request.session_id[:64]
    if retention == "long" and compat.get("supportsLongCacheRetention") is not False:
        params["prompt_cache_retention"] = "24h"
    params["store"] = False
    max_tokens = base_max_tokens(request)
    if max_tokens:
        params["max_output_tokens"] = max_tokens
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("parameters") or {},
                "strict": False,
            }
            for tool in request.tools
        ]
    if model.get("reasoning"):
        level_map = model.get("thinkingLevelMap") or {}
        level = reasoning_level(resolved, request)
        if level is not None:
            effort = level_map.get(level) or level
            params["reasoning"] = {"effort": effort, "summary": "auto"}
            params["include"] = ["reasoning.encrypted_content"]
        elif model.get("provider") != "github-copilot" and not (
            "off" in level_map and level_map["off"] is None
        ):
            params["reasoning"] = {"effort": level_map.get("off") or "none"}
    return params


def _headers(resolved: ResolvedModel, request: ModelRequest) -> dict[str, str]:
    headers: dict[str, str] = {}
    if request.session_id:
        if (resolved.model.get("compat") or {}).get("sendSessionIdHeader") is not False:
            headers["session_id"] = request.session_id
        headers["x-client-request-id"] = request.session_id
    return {**headers, **request_headers(resolved)}


def _opener(resolved: ResolvedModel, request: ModelRequest) -> Callable[[], Iterable[Any]]:
    """What opens the request's stream (raises ProviderError before any is sent)."""
    headers = _headers(resolved, request)
    client = openai_client(API, resolved, headers)
    params = build_params(resolved, request)
    # object: each event stays the JSON the server sent (reasoning items are replayed
    # verbatim on the next turn).
    return post_stream(client, "/responses", params, Response, openai.Stream[object])


STATUS = {
    "completed": "stop",
    "incomplete": "length",
    "failed": "error",
    "cancelled": "error",
    "in_progress": "stop",
    "queued": "stop",
}


TEXT_DELTAS = {
    "response.reasoning_summary_text.delta": "thinking",
    "response.reasoning_text.delta": "thinking",
    "response.output_text.delta": "text",
    "response.refusal.delta": "text",
}


class _State(StreamAssembly):
    def __init__(self, message: dict[str, Any], on_delta: DeltaSink | None):
        super().__init__(message, on_delta)
        self.slots: dict[
            int | None, dict[str, Any]
        ] = {}  # by output_index (which a stream may omit)
        self.by_reasoning_id: dict[str, dict[str, Any]] = {}
        self.terminal = False

    def incomplete(self) -> str | None:
        if not self.terminal:
            return "OpenAI Responses stream ended before a terminal response event"
        if self.message["stopReason"] == "error":
            return "An unknown error occurred"
        return None

    def _slot(self, index: int | None, item: dict[str, Any]) -> dict[str, Any] | None:
        kind = item.get("type")
        block: dict[str, Any]
        if kind == "reasoning":
            block = {"type": "thinking", "thinking": ""}
        elif kind == "message":
            block = {"type": "text", "text": ""}
        elif kind == "function_call":
            block = {
                "type": "toolCall",
                "id": f"{item.get('call_id')}|{item.get('id')}",
                "name": item.get("name", ""),
                "arguments": {},
            }
            self.raw_arguments[id(block)] = item.get("arguments") or ""
        else:
            return None
        self.slots[index] = self.add_block(block)
        return block

    def _get(self, index: int | None, kind: str) -> dict[str, Any] | None:
        block = self.slots.get(index)
        return block if block is not None and block["type"] == kind else None

    def feed(self, event: Any) -> None:
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        index = event.get("output_index")
        if kind == "response.output_item.added":
            self._slot(index, event.get("item") or {})
        elif kind in TEXT_DELTAS:
            block = self._get(index, TEXT_DELTAS[kind])
            if block is not None:
                self.append(block, block["type"], event.get("delta", ""))
        elif kind == "response.reasoning_summary_part.done":
            block = self._get(index, "thinking")
            if block is not None:
                self.append(block, "thinking", "\n\n")
        elif kind == "response.function_call_arguments.delta":
            block = self._get(index, "toolCall")
            if block is not None:
                self.add_arguments(block, event.get("delta", ""))
        elif kind == "response.function_call_arguments.done":
            block = self._get(index, "toolCall")
            if block is not None:
                self.raw_arguments[id(block)] = event.get("arguments", "")
        elif kind == "response.output_item.done":
            self._item_done(index, event.get("item") or {})
        elif kind in ("response.completed", "response.incomplete"):
            self._finalize_response(event.get("response") or {})
        elif kind == "error":
            self.error = _stream_error(f"Error Code {event.get('code')}: {event.get('message')}")
        elif kind == "response.failed":
            self.terminal = True
            self.error = _stream_error(_failure_text(event.get("response") or {}))

    def _item_done(self, index: int | None, item: dict[str, Any]) -> None:
        """An output item as it ended: its full text, signature or arguments."""
        block = self.slots.get(index) or self._slot(index, item)
        if block is None:
            return
        if item.get("type") == "reasoning" and block["type"] == "thinking":
            summary = "\n\n".join(s.get("text", "") for s in item.get("summary") or [])
            content = "\n\n".join(c.get("text", "") for c in item.get("content") or [])
            block["thinking"] = summary or content or block["thinking"]
            block["thinkingSignature"] = json.dumps(item, separators=(",", ":"), ensure_ascii=False)
            if item.get("id"):
                self.by_reasoning_id[item["id"]] = block
        elif item.get("type") == "message" and block["type"] == "text":
            block["text"] = "".join(
                (c.get("text") if c.get("type") == "output_text" else c.get("refusal")) or ""
                for c in item.get("content") or []
            )
            signature: dict[str, Any] = {"v": 1, "id": item.get("id")}
            if item.get("phase"):
                signature["phase"] = item["phase"]
            block["textSignature"] = json.dumps(signature, separators=(",", ":"))
        elif item.get("type") == "function_call" and block["type"] == "toolCall":
            self.raw_arguments[id(block)] = (
                item.get("arguments") or self.raw_arguments.get(id(block)) or "{}"
            )
            self.parse_arguments(block)
        self.slots.pop(index, None)

    def _finalize_response(self, response: dict[str, Any]) -> None:
        self.terminal = True
        for item in response.get("output") or []:
            if item.get("type") != "reasoning" or not item.get("encrypted_content"):
                continue
            block = self.by_reasoning_id.get(item.get("id"))
            if block is None or not block.get("thinkingSignature"):
                continue
            stored = json.loads(block["thinkingSignature"])
            if not stored.get("encrypted_content"):
                stored["encrypted_content"] = item["encrypted_content"]
                block["thinkingSignature"] = json.dumps(stored, separators=(",", ":"))
        usage = response.get("usage")
        if usage:
            details = usage.get("input_tokens_details") or {}
            cached = details.get("cached_tokens") or 0
            write = details.get("cache_write_tokens") or 0
            self.message["usage"] = usage_of(
                max(0, (usage.get("input_tokens") or 0) - cached - write),
                usage.get("output_tokens") or 0,
                cached,
                write,
                total=usage.get("total_tokens") or 0,
            )
        reason = STATUS.get(response.get("status") or "completed", "stop")
        if reason == "stop" and any(b["type"] == "toolCall" for b in self.message["content"]):
            reason = "toolUse"
        self.message["stopReason"] = reason


def _failure_text(response: dict[str, Any]) -> str:
    error = response.get("error")
    details = response.get("incomplete_details")
    if error:
        return f"{error.get('code') or 'unknown'}: {error.get('message') or 'no message'}"
    if details and details.get("reason"):
        return f"incomplete: {details['reason']}"
    return "Unknown error (no error details in response)"


def _stream_error(text: str) -> ProviderError:
    return classify("openai", text, None)


# What providers.stream_for hands out for this API.
stream = api_stream(_State, _opener, lambda exc, resolved: from_sdk(exc, resolved.provider, openai))
