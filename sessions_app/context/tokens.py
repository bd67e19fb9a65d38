"""pi's token estimates (chars / 4, in UTF-16 code units) and the compaction trigger.

This is the estimator the golden vectors use, kept next to the tiktoken counter
(``tokenizer.py``) so cut points can be compared with pi.

Public API
----------
- ``estimate_tokens(message) -> int``
- ``estimate_text_tokens(text) -> int``
- ``calculate_context_tokens(usage) -> int``
- ``get_assistant_usage(message) -> dict | None``
- ``estimate_context_tokens(messages) -> {tokens, usageTokens, trailingTokens, lastUsageIndex}``
- ``should_compact(context_tokens, context_window, settings) -> bool``
"""

from __future__ import annotations

import json
from typing import Any

from .jsutil import js_json_dumps, utf16_len

__all__ = [
    "IMAGE_CHARS",
    "calculate_context_tokens",
    "estimate_context_tokens",
    "estimate_text_tokens",
    "estimate_tokens",
    "get_assistant_usage",
    "should_compact",
]

IMAGE_CHARS = 4800  # an image counts as 4800 chars = 1200 tokens


def _ceil4(chars: int) -> int:
    return -(-chars // 4)


def _slen(value: Any) -> int:
    return utf16_len(value) if isinstance(value, str) else 0


def _text_blocks_chars(content: Any, count_images: bool) -> int:
    chars = 0
    if isinstance(content, str):
        return utf16_len(content)
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                text = block.get("text")
                if text and isinstance(text, str):
                    chars += utf16_len(text)
            elif btype == "image" and count_images:
                chars += IMAGE_CHARS
    return chars


_dumps_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def _json_len(value: Any) -> int:
    """``JSON.stringify(value).length``."""
    if value is None:
        return 4  # "null"
    if type(value) is dict and all(
        type(v) is str and type(k) is str and not k[:1].isdigit() for k, v in value.items()
    ):
        # Flat string-valued objects (the usual tool arguments): the C encoder prints
        # exactly what JSON.stringify prints, except for non-ASCII text (lone
        # surrogates), which takes the exact path below.
        text = _dumps_compact(value)
        if text.isascii():
            return len(text)
    try:
        return utf16_len(js_json_dumps(value))
    except (TypeError, ValueError):
        return 0


def estimate_tokens(message: dict[str, Any]) -> int:
    """pi's ``estimateTokens``: ceil(chars / 4) by message role."""
    role = message.get("role")
    if role == "user":
        return _ceil4(_text_blocks_chars(message.get("content"), False))
    if role == "assistant":
        chars = 0
        for block in message.get("content") or ():
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                chars += _slen(block.get("text"))
            elif btype == "thinking":
                chars += _slen(block.get("thinking"))
            elif btype == "toolCall":
                chars += _slen(block.get("name"))
                if "arguments" in block:
                    chars += _json_len(block["arguments"])
        return _ceil4(chars)
    if role in ("custom", "toolResult"):
        return _ceil4(_text_blocks_chars(message.get("content"), True))
    if role == "bashExecution":
        return _ceil4(_slen(message.get("command")) + _slen(message.get("output")))
    if role in ("branchSummary", "compactionSummary"):
        return _ceil4(_slen(message.get("summary")))
    return 0


def estimate_text_tokens(text: str) -> int:
    return _ceil4(utf16_len(text)) if text else 0


def calculate_context_tokens(usage: dict[str, Any]) -> int:
    """``usage.totalTokens`` when non-zero, else input + output + cacheRead + cacheWrite."""
    total = usage.get("totalTokens")
    if total:
        return total
    return (
        (usage.get("input") or 0)
        + (usage.get("output") or 0)
        + (usage.get("cacheRead") or 0)
        + (usage.get("cacheWrite") or 0)
    )


def get_assistant_usage(message: dict[str, Any]) -> dict[str, Any] | None:
    """Usage of a successful assistant message (not aborted / error), else None."""
    if message.get("role") != "assistant" or "usage" not in message:
        return None
    if message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    return usage if usage else None


def estimate_context_tokens(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Context size: last successful assistant usage + chars/4 estimate of what follows."""
    last_index = None
    usage = None
    for i in range(len(messages) - 1, -1, -1):
        usage = get_assistant_usage(messages[i])
        if usage:
            last_index = i
            break
    if last_index is None:
        estimated = sum(estimate_tokens(m) for m in messages)
        return {
            "tokens": estimated,
            "usageTokens": 0,
            "trailingTokens": estimated,
            "lastUsageIndex": None,
        }
    usage_tokens = calculate_context_tokens(usage)
    trailing = sum(estimate_tokens(messages[i]) for i in range(last_index + 1, len(messages)))
    return {
        "tokens": usage_tokens + trailing,
        "usageTokens": usage_tokens,
        "trailingTokens": trailing,
        "lastUsageIndex": last_index,
    }


def _setting(settings: Any, attr: str, key: str) -> Any:
    if isinstance(settings, dict):
        return settings.get(key)
    return getattr(settings, attr)


def should_compact(context_tokens: float, context_window: float, settings: Any) -> bool:
    """True when compaction is enabled and tokens > window - reserveTokens.

    ``settings`` is a ``CompactionSettings`` or a pi-shaped dict
    (``enabled``, ``reserveTokens``).
    """
    if not _setting(settings, "enabled", "enabled"):
        return False
    return context_tokens > context_window - _setting(settings, "reserve_tokens", "reserveTokens")
