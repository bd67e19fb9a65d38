"""Plain-text views of one pi entry: preview line, searchable text, role and tool.

Used for the denormalized columns the pages and search read, so they never have to
parse payloads in bulk.
"""

import json
import math

PREVIEW_CHARS = 300


def _blocks_text(content, *, with_thinking: bool = True) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "thinking" and with_thinking:
            parts.append(str(block.get("thinking", "")))
        elif kind == "toolCall":
            args = json.dumps(block.get("arguments", {}), ensure_ascii=False)
            parts.append(f"{block.get('name', '')}({args})")
        elif kind == "image":
            parts.append("[image]")
    return "\n".join(p for p in parts if p)


def entry_role(entry: dict) -> str:
    if entry.get("type") == "message":
        return str((entry.get("message") or {}).get("role", ""))
    return ""


def entry_tool_name(entry: dict) -> str:
    """The tool a toolResult answers, or the first tool an assistant calls."""
    message = entry.get("message") or {}
    if entry.get("type") != "message":
        return ""
    if message.get("role") == "toolResult":
        return str(message.get("toolName", ""))
    if message.get("role") == "bashExecution":
        return "bash"
    if message.get("role") == "assistant" and isinstance(message.get("content"), list):
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                return str(block.get("name", ""))
    return ""


def entry_text(entry: dict) -> str:
    """All the human-readable text of an entry (for search and token estimates)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message") or {}
        role = message.get("role")
        if role == "bashExecution":
            return f"$ {message.get('command', '')}\n{message.get('output', '')}"
        return _blocks_text(message.get("content"))
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
        return str(entry.get("customType", ""))
    return ""


def entry_preview(entry: dict) -> str:
    """One line for the tree: the text without thinking, whitespace folded."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message") or {}
        if message.get("role") == "bashExecution":
            text = f"$ {message.get('command', '')}"
        else:
            text = _blocks_text(message.get("content"), with_thinking=False)
    else:
        text = entry_text(entry)
    return _folded_prefix(text, PREVIEW_CHARS)


def _folded_prefix(text: str, limit: int) -> str:
    """``" ".join(text.split())[:limit]`` without splitting all of a huge text."""
    size = limit * 4
    while size < len(text):
        folded = " ".join(text[:size].split())
        if len(folded) > limit:
            return folded[:limit]
        size *= 4
    return " ".join(text.split())[:limit]


def rough_token_count(entry: dict) -> int:
    """A cheap per-entry token figure for the tree (chars / 4, like pi's estimate)."""
    return math.ceil(len(entry_text(entry)) / 4)
