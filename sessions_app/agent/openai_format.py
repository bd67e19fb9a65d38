"""pi-shaped LLM messages (after convert_to_llm) -> OpenAI chat-completions messages.

- user: a string, or parts (``text``; ``image`` -> ``image_url`` with a data URL);
- assistant: text blocks joined into ``content``; ``toolCall`` blocks -> ``tool_calls``
  (arguments serialized as JSON); thinking blocks are not sent back;
- toolResult -> role ``tool`` (text); images in a tool result follow as a user message,
  since tool messages cannot carry images.

Like pi's transformMessages: assistant messages that ended in error or were aborted are
left out (their tool calls may be incomplete), a tool call without a result gets a
synthetic error result, and a result whose call is not in the history is dropped, so
the request is always well-formed.
"""

from __future__ import annotations

import json
from typing import Any

NO_RESULT_TEXT = "No result provided"


def _image_url(block: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {
            "url": f"data:{block.get('mimeType', 'image/png')};base64,{block.get('data', '')}"
        },
    }


def _user_content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append({"type": "text", "text": block.get("text", "")})
        elif block.get("type") == "image":
            parts.append(_image_url(block))
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _tool_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = [
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    ]
    return "\n".join(texts)


def _tool_images(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return []
    return [b for b in content or [] if isinstance(b, dict) and b.get("type") == "image"]


def _assistant_item(msg: dict[str, Any]) -> dict[str, Any] | None:
    """An assistant message in OpenAI's shape, or None when it is left out (it stopped on
    an error or was aborted, or holds neither text nor a tool call)."""
    if msg.get("stopReason") in ("error", "aborted"):
        return None
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in msg.get("content") or []:
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            texts.append(block["text"])
        elif kind == "toolCall":
            calls.append(
                {
                    "id": block.get("id"),
                    "type": "function",
                    "function": {
                        "name": block.get("name"),
                        "arguments": json.dumps(block.get("arguments") or {}, ensure_ascii=False),
                    },
                }
            )
    if not texts and not calls:
        return None
    item: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        item["tool_calls"] = calls
    return item


def to_openai_messages(system_prompt: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    pending: dict[str, str] = {}  # tool_call_id -> name, awaiting a result
    deferred_images: list[dict[str, Any]] = []

    def close_pending() -> None:
        for call_id in list(pending):
            out.append({"role": "tool", "tool_call_id": call_id, "content": NO_RESULT_TEXT})
        pending.clear()
        flush_images()

    def flush_images() -> None:
        if deferred_images:
            out.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "Attached image(s) from tool result:"}]
                    + [_image_url(b) for b in deferred_images],
                }
            )
            deferred_images.clear()

    for msg in messages:
        role = msg.get("role")
        if role == "toolResult":
            call_id = msg.get("toolCallId")
            if call_id not in pending:
                continue
            pending.pop(call_id)
            text = _tool_text(msg.get("content"))
            images = _tool_images(msg.get("content"))
            if images and not text:
                text = "(see attached image)"
            out.append({"role": "tool", "tool_call_id": call_id, "content": text or "(no output)"})
            deferred_images.extend(images)
            if not pending:
                flush_images()
            continue
        close_pending()
        if role == "user":
            out.append({"role": "user", "content": _user_content(msg.get("content"))})
        elif role == "assistant":
            item = _assistant_item(msg)
            if item is None:
                continue
            for call in item.get("tool_calls", ()):
                pending[call["id"]] = call["function"]["name"]
            out.append(item)
    close_pending()
    return out
