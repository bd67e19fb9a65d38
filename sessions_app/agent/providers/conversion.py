"""pi's message transform, which every API module runs before converting to its wire
shape (pi-ai 0.80.2's ``transform-messages.js``): images a model cannot take replaced,
thinking replayed only to the model that wrote it, every tool call answered; and the
empty assistant message a stream fills.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from .base import ResolvedModel

NO_RESULT_TEXT = "No result provided"


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
    image_block: Callable[[dict[str, Any]], dict[str, Any]],
) -> list[dict[str, Any]]:
    """A user message's content (text or blocks) in an API's block shape, text cleaned."""
    return [
        text_block(clean(item.get("text", ""))) if item.get("type") == "text" else image_block(item)
        for item in content_list(content)
    ]


def _image_placeholder(content: list[dict[str, Any]], placeholder: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
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
    normalize_id: Callable[[str, dict[str, Any]], str] | None = None,
) -> list[dict[str, Any]]:
    """pi's transformMessages: images dropped for text-only models, thinking of another
    model turned into text, tool-call ids normalized (results follow), failed or aborted
    assistant turns left out, and a synthetic error result for every call left without
    one."""
    id_map: dict[str | None, str] = {}
    prepared = [_prepare_message(msg, model, normalize_id, id_map) for msg in messages]
    return _answer_every_call(prepared)


def _prepare_message(
    msg: dict[str, Any],
    model: dict[str, Any],
    normalize_id: Callable[[str, dict[str, Any]], str] | None,
    id_map: dict[str | None, str],
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
    normalize_id: Callable[[str, dict[str, Any]], str] | None,
    id_map: dict[str | None, str],
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
    pending: list[dict[str, Any]] = []
    seen: set[str | None] = set()  # (a call id may be missing)
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


def _missing_results(
    calls: list[dict[str, Any]], answered: set[str | None]
) -> list[dict[str, Any]]:
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


def tool_text(content: list[dict[str, Any]]) -> str:
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def has_images(content: list[dict[str, Any]]) -> bool:
    return any(b.get("type") == "image" for b in content)
