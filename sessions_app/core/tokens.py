"""pi's token estimates (chars / 4, in UTF-16 code units) and the compaction trigger.

This is the estimator the golden vectors use, kept next to the tiktoken counter
(``tokenizer.py``) so cut points can be compared with pi.

Public API
----------
- ``estimate_tokens(message) -> int``
- ``entry_token_estimate(entry) -> int``: what an entry adds to the cut-point walk
  (``estimate_tokens`` of a ``message`` entry's message, 0 for every other entry);
  stored per entry at write time so cut-point searches only sum integers
- ``estimate_text_tokens(text) -> int``
- ``calculate_context_tokens(usage) -> int``
- ``get_assistant_usage(message) -> dict | None``
- ``estimate_context_tokens(messages) -> {tokens, usageTokens, trailingTokens, lastUsageIndex}``
- ``should_compact(context_tokens, context_window, compaction) -> bool``
"""

from __future__ import annotations

import json
from typing import Any

from .jsutil import _simple_float, js_json_dumps, utf16_len

__all__ = [
    "IMAGE_CHARS",
    "calculate_context_tokens",
    "entry_token_estimate",
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


# Hot paths below inline ``utf16_len``'s ASCII fast path (``len`` is exact for
# ASCII text) to save a call per string.


def _text_blocks_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content) if content.isascii() else utf16_len(content)
    chars = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                text = block.get("text")
                if text and isinstance(text, str):
                    chars += len(text) if text.isascii() else utf16_len(text)
            elif btype == "image":
                chars += IMAGE_CHARS
    return chars


# The C quoting function of the json module: escapes exactly what JSON.stringify
# escapes (``"``, ``\\``, controls < U+0020, with the same short forms), keeps
# other text as is, except lone surrogates, which JS escapes as ``\\udxxx`` and
# this keeps raw (those strings take the exact path).
_quote = json.encoder.encode_basestring
_MAX_SAFE_INT = 2**53


def _quoted_len(s: str) -> int:
    """``JSON.stringify(s).length`` for a str."""
    q = _quote(s)
    if q.isascii():
        return len(q)
    try:
        # Strict UTF-16 fails on any surrogate code point: only then is the slow path needed.
        return len(q.encode("utf-16-le")) >> 1
    except UnicodeEncodeError:
        return utf16_len(js_json_dumps(s))


def _json_len(value: Any) -> int:
    """``JSON.stringify(value).length`` (0 for values JSON cannot represent)."""
    if value is None:
        return 4  # "null"
    n = _json_len_fast(value)
    if n >= 0:
        return n
    try:
        return utf16_len(js_json_dumps(value))
    except (TypeError, ValueError):
        return 0


def _json_len_fast(value: Any) -> int:
    """``JSON.stringify(value).length`` without building the text, or -1.

    Handles the usual shapes (str keys; str, bool, None, safe-integer, plain float,
    list and dict values) and returns -1 for anything else (huge ints, floats that
    print differently in Python, non-str keys, other types), so the caller takes the
    exact path for the whole value.  Key order does not change the length, so JS's
    integer-like-keys-first ordering needs no handling here.
    """
    vtype = type(value)
    if vtype is dict:
        return _dict_len_fast(value)
    if vtype is str:
        return _quoted_len(value)
    if vtype is list:
        return _list_len_fast(value)
    if vtype is int and -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
        return len(str(value))
    if vtype is bool:
        return 4 if value else 5
    if value is None:
        return 4
    if vtype is float and _simple_float(value):
        return len(repr(value))  # same shortest round-trip digits as JS
    return -1


def _dict_len_fast(value: dict[str, Any]) -> int:
    """_json_len_fast of a dict (str and safe-int values inline: the common case)."""
    if not value:
        return 2
    n = 2 * len(value) + 1  # braces, one colon per item, commas between items
    for key, item in value.items():
        if type(key) is not str:
            return -1
        q = _quote(key)
        n += len(q) if q.isascii() else _quoted_len(key)
        itype = type(item)
        if itype is str:
            q = _quote(item)
            n += len(q) if q.isascii() else _quoted_len(item)
        elif itype is int and -_MAX_SAFE_INT <= item <= _MAX_SAFE_INT:
            n += len(str(item))
        else:
            sub = _json_len_fast(item)
            if sub < 0:
                return -1
            n += sub
    return n


def _list_len_fast(value: list[Any]) -> int:
    """_json_len_fast of a list."""
    n = len(value) + 1 if value else 2  # brackets and commas
    for item in value:
        sub = _json_len_fast(item)
        if sub < 0:
            return -1
        n += sub
    return n


def estimate_tokens(message: dict[str, Any]) -> int:
    """pi's ``estimateTokens``: ceil(chars / 4) by message role."""
    role = message.get("role")
    if role == "assistant":
        chars = 0
        for block in message.get("content") or ():
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                text = block.get("text")
                if isinstance(text, str):
                    chars += len(text) if text.isascii() else utf16_len(text)
            elif btype == "toolCall":
                name = block.get("name")
                if isinstance(name, str):
                    chars += len(name) if name.isascii() else utf16_len(name)
                if "arguments" in block:
                    chars += _json_len(block["arguments"])
            elif btype == "thinking":
                text = block.get("thinking")
                if isinstance(text, str):
                    chars += len(text) if text.isascii() else utf16_len(text)
        return -(-chars // 4)
    if role == "user" or role == "toolResult" or role == "custom":
        # pi 0.80.2 counts images in user messages too (4800 chars each; 0.73 did not).
        return -(-_text_blocks_chars(message.get("content")) // 4)
    if role == "bashExecution":
        return _ceil4(_slen(message.get("command")) + _slen(message.get("output")))
    if role == "branchSummary" or role == "compactionSummary":
        return _ceil4(_slen(message.get("summary")))
    return 0


def entry_token_estimate(entry: dict[str, Any]) -> int:
    """What one entry adds to pi's cut-point walk (``findCutPoint``).

    pi sums ``estimateTokens(entry.message)`` over ``message`` entries only; every other
    entry adds nothing. The service layer stores this figure with each entry when it is
    written, so ``find_cut_point(..., estimates=...)`` just sums integers.
    """
    if entry.get("type") != "message":
        return 0
    message = entry.get("message")
    return estimate_tokens(message) if isinstance(message, dict) else 0


def estimate_text_tokens(text: str) -> int:
    return _ceil4(utf16_len(text)) if text else 0


def calculate_context_tokens(usage: dict[str, Any]) -> int:
    """``usage.totalTokens`` when non-zero, else input + output + cacheRead + cacheWrite."""
    total: int | None = usage.get("totalTokens")
    if total:
        return total
    return (
        (usage.get("input") or 0)
        + (usage.get("output") or 0)
        + (usage.get("cacheRead") or 0)
        + (usage.get("cacheWrite") or 0)
    )


def get_assistant_usage(message: dict[str, Any]) -> dict[str, Any] | None:
    """Usage of a successful assistant message, else None.

    Aborted and errored messages, and (pi 0.80.2) usage that adds up to
    zero tokens, carry no valid usage.
    """
    if message.get("role") != "assistant" or "usage" not in message:
        return None
    if message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    if not isinstance(usage, dict) or not calculate_context_tokens(usage) > 0:
        return None
    return usage


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
    assert usage is not None  # last_index is set only with a usage
    usage_tokens = calculate_context_tokens(usage)
    trailing = sum(estimate_tokens(messages[i]) for i in range(last_index + 1, len(messages)))
    return {
        "tokens": usage_tokens + trailing,
        "usageTokens": usage_tokens,
        "trailingTokens": trailing,
        "lastUsageIndex": last_index,
    }


def _setting(compaction: Any, attr: str, key: str) -> Any:
    if isinstance(compaction, dict):
        return compaction.get(key)
    return getattr(compaction, attr)


def should_compact(context_tokens: float, context_window: float, compaction: Any) -> bool:
    """True when compaction is enabled and tokens > window - reserveTokens.

    ``compaction`` is a ``CompactionSettings`` or a pi-shaped dict
    (``enabled``, ``reserveTokens``).
    """
    if not _setting(compaction, "enabled", "enabled"):
        return False
    reserve: float = _setting(compaction, "reserve_tokens", "reserveTokens")
    return context_tokens > context_window - reserve
