"""Plain-text views of one pi entry: preview line, searchable text, role and tool.

Used for the denormalized columns the pages and search read, so they never have to
parse payloads in bulk.
"""

import json
import math
from typing import Any

from sessions_app.core.pi1_entries import (
    KNOWN_ENTRY_TYPES,
    context_edit_text,
    system_message_text,
    unknown_entry_text,
    usage_text,
)
from sessions_app.core.text import clean_text
from sessions_app.core.tokens import entry_token_estimate

PREVIEW_CHARS = 300
# Characters PostgreSQL text refuses and Python cannot encode to UTF-8.


def _blocks_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return _blocks_texts(content)[0]
    return ""


def entry_digest(entry: dict[str, Any]) -> tuple[str, str, str, int]:
    """(role, tool name, preview, token count) of an entry, in one pass over its content.

    The role is a message's role. The tool name is the tool a toolResult answers, "bash"
    for a bashExecution, or the first tool an assistant calls. The preview is one line
    for the tree: the text without thinking, whitespace folded. The token count is a
    cheap figure for the tree: the characters of `entry_text` / 4, like pi's estimate.
    An import computes this for every entry, hence the single pass.
    """
    if entry.get("type") != "message":
        text = entry_text(entry)
        return "", "", _folded_prefix(text, PREVIEW_CHARS), math.ceil(len(text) / 4)
    message = entry.get("message")
    if not isinstance(message, dict):
        message = {}
    role = message.get("role")
    tool = ""
    if role == "bashExecution":
        visible = f"$ {message.get('command', '')}"
        full = f"{visible}\n{message.get('output', '')}"
        tool = "bash"
    else:
        if role == "toolResult":
            tool = str(message.get("toolName", ""))
        content = message.get("content")
        if isinstance(content, list):
            full, visible, first_tool = _blocks_texts(content)
            if role == "assistant" and first_tool is not None:
                tool = first_tool
        else:
            full = visible = content if isinstance(content, str) else ""
    role = "" if role is None else str(role)
    return role, tool, _folded_prefix(visible, PREVIEW_CHARS), math.ceil(len(full) / 4)


def _blocks_texts(content: list[Any]) -> tuple[str, str, str | None]:
    """(text with thinking, text without it, first tool called) of content blocks."""
    parts: list[str] = []
    visible: list[str] = []
    first_tool = None
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            part = str(block.get("text", ""))
        elif kind == "thinking":
            part = str(block.get("thinking", ""))
            if part:
                parts.append(part)
            continue
        elif kind == "toolCall":
            name = str(block.get("name", ""))
            if first_tool is None:
                first_tool = name
            args = json.dumps(block.get("arguments", {}), ensure_ascii=False)
            part = f"{name}({args})"
        elif kind == "image":
            part = "[image]"
        else:
            continue
        if part:
            parts.append(part)
            visible.append(part)
    return "\n".join(parts), "\n".join(visible), first_tool


def entry_role(entry: dict[str, Any]) -> str:
    return entry_digest(entry)[0]


def entry_text(entry: dict[str, Any]) -> str:
    """All the human-readable text of an entry (for search and token estimates)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return _message_text(message) if isinstance(message, dict) else ""
    if kind in ("compaction", "branch_summary"):
        return str(entry.get("summary", ""))
    if kind == "custom_message":
        return _blocks_text(entry.get("content"))
    if kind == "label":
        return str(entry.get("label") or "")
    if kind == "session_info":
        return str(entry.get("name") or "")
    if kind == "model_change":
        return f"{entry.get('provider', '')}/{entry.get('modelId', '')}"
    if kind == "thinking_level_change":
        return str(entry.get("thinkingLevel", ""))
    if kind == "custom":
        return _custom_text(entry)
    if kind == "usage":
        return usage_text(entry)
    if kind == "context_edit":
        return context_edit_text(entry)
    if kind not in KNOWN_ENTRY_TYPES:
        return unknown_entry_text(entry)
    return ""


def _message_text(message: dict[str, Any]) -> str:
    role = message.get("role")
    if role == "bashExecution":
        return f"$ {message.get('command', '')}\n{message.get('output', '')}"
    if role == "system":
        return system_message_text(message)
    return _blocks_text(message.get("content"))


def _custom_text(entry: dict[str, Any]) -> str:
    data = entry.get("data")
    if entry.get("customType") == "piweb.workspace" and isinstance(data, dict):
        return f"continue in {data.get('cwd', '')}"  # (piweb's workspace choice)
    return str(entry.get("customType", ""))


def entry_preview(entry: dict[str, Any]) -> str:
    """One line for the tree: the text without thinking, whitespace folded."""
    return entry_digest(entry)[2]


def _folded_prefix(text: str, limit: int) -> str:
    """``" ".join(text.split())[:limit]`` without splitting all of a huge text.

    Folding a prefix of the text gives a prefix of the folded text, so once a folded
    prefix is longer than `limit` its start is the answer. Most texts need no folding
    at their start: printable (so no whitespace but the ASCII space), no double space,
    no leading space.
    """
    head = text[: limit + 1]
    if head.isprintable() and "  " not in head and head[:1] != " ":
        return head[:limit] if len(text) > limit else head.rstrip(" ")
    size = limit + limit // 4
    while size < len(text):
        folded = " ".join(text[:size].split())
        if len(folded) > limit:
            return folded[:limit]
        size *= 4
    return " ".join(text.split())[:limit]


def entry_row_columns(payload: dict[str, Any]) -> tuple[str, str, str, str, str, int, int]:
    """(type, timestamp, role, tool name, preview, token count, pi token estimate): the
    denormalized columns of an entry, cut to their column sizes and safe for any
    database. The last is `entry_token_estimate` (what compaction's cut-point walk sums)."""
    role, tool, preview, tokens = entry_digest(payload)
    etype = payload.get("type", "")
    etype = (etype if isinstance(etype, str) else str(etype))[:32]
    stamp = payload.get("timestamp", "")
    stamp = (stamp if isinstance(stamp, str) else str(stamp))[:40]
    role, tool = role[:32], tool[:100]
    joined = etype + stamp + role + tool + preview
    if not joined.isascii() or "\x00" in joined:
        etype, stamp, role, tool, preview = map(clean_text, (etype, stamp, role, tool, preview))
    return etype, stamp, role, tool, preview, tokens, entry_token_estimate(payload)
