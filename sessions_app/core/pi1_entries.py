"""Plain-text and structured views of the entries pi 1.x writes (and of unknown ones).

pi 1.x added `usage` entries (cost that never enters the context), `context_edit` entries
(an earlier message's content replaced, or dropped, in the context of this branch) and
`role: "system"` messages (prompt sections and tool changes inside the transcript).
Entry types newer still are unknown to us: they keep their JSON and show their type.
These helpers read them for the tree, the entry pane, search and the context inspector;
building the context itself is `messages.py`'s job.
"""

from __future__ import annotations

import json
from typing import Any

# Entry types piweb knows (pi 0.x and 1.x); anything else is shown as an unknown type.
KNOWN_ENTRY_TYPES = frozenset(
    {
        "message",
        "compaction",
        "branch_summary",
        "custom_message",
        "custom",
        "label",
        "session_info",
        "model_change",
        "thinking_level_change",
        "usage",
        "context_edit",
    }
)
# Message roles piweb knows; a message with another role shows its role and JSON.
KNOWN_ROLES = frozenset({"user", "assistant", "toolResult", "bashExecution", "custom", "system"})


def _number(value: Any) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def usage_figures(entry: dict[str, Any]) -> dict[str, Any]:
    """The figures of a `usage` entry: kind, provider/model, token counts, cost total."""
    usage = entry.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    cost = usage.get("cost")
    if not isinstance(cost, dict):
        cost = {}
    return {
        "kind": str(entry.get("kind") or ""),
        "provider": str(entry.get("provider") or ""),
        "model": str(entry.get("model") or ""),
        "input": _number(usage.get("input")),
        "output": _number(usage.get("output")),
        "cache_read": _number(usage.get("cacheRead")),
        "cache_write": _number(usage.get("cacheWrite")),
        "total_tokens": _number(usage.get("totalTokens")),
        "cost": _number(cost.get("total")),
        "note": str(entry.get("note") or ""),
    }


def usage_text(entry: dict[str, Any]) -> str:
    f = usage_figures(entry)
    model = "/".join(x for x in (f["provider"], f["model"]) if x)
    words = [f["kind"] or "usage", model, f"{int(f['total_tokens'])} tokens"]
    if f["cost"]:
        words.append(f"${f['cost']:.4f}")
    if f["note"]:
        words.append(f["note"])
    return " ".join(w for w in words if w)


def content_text(content: Any) -> str:
    """The text of a content value: a string, or the text blocks of a block list."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


def edit_action(entry: dict[str, Any]) -> str:
    """What a `context_edit` does to its target: "dropped" (replacement null) or "replaced"."""
    return "dropped" if entry.get("replacement") is None else "replaced"


def edit_replacement_content(entry: dict[str, Any]) -> Any:
    replacement = entry.get("replacement")
    return replacement.get("content") if isinstance(replacement, dict) else None


def context_edit_text(entry: dict[str, Any]) -> str:
    target = str(entry.get("targetId") or "")
    if edit_action(entry) == "dropped":
        return f"drops {target} from the context"
    return f"replaces {target}: {content_text(edit_replacement_content(entry))}"


def system_message_view(message: dict[str, Any]) -> dict[str, Any]:
    """A system message's prompt text, sections and tool changes."""
    sections = message.get("sections")
    if not isinstance(sections, dict):
        sections = {}

    def tools(key: str) -> list[dict[str, Any]]:
        out = []
        for tool in message.get(key) or []:
            if isinstance(tool, dict):
                out.append(
                    {
                        "name": str(tool.get("name", "")),
                        "description": str(tool.get("description", "")),
                    }
                )
            elif isinstance(tool, str):
                out.append({"name": tool, "description": ""})
        return out

    return {
        "content": content_text(message.get("content")),
        "sections": [(str(name), content_text(text)) for name, text in sections.items()],
        "tools_added": tools("toolsAdded"),
        "tools_removed": tools("toolsRemoved"),
    }


def system_message_text(message: dict[str, Any]) -> str:
    view = system_message_view(message)
    parts = [view["content"]]
    for name, text in view["sections"]:
        parts.append(f"{name}: {text}")
    for key, sign in (("tools_added", "+"), ("tools_removed", "-")):
        for tool in view[key]:
            parts.append(f"{sign}{tool['name']} {tool['description']}".rstrip())
    return "\n".join(p for p in parts if p)


def _strings(value: Any, out: list[str], budget: list[int]) -> None:
    """Every string inside a JSON value (keys excluded), depth first, within a budget."""
    stack = [value]
    while stack and budget[0] > 0:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            budget[0] -= len(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


UNKNOWN_TEXT_CHARS = 20000


def unknown_entry_text(entry: dict[str, Any]) -> str:
    """An unknown entry's type and the strings it carries (for preview and search)."""
    rest = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}
    out: list[str] = [str(entry.get("type", ""))]
    _strings(rest, out, [UNKNOWN_TEXT_CHARS])
    return " ".join(out)[:UNKNOWN_TEXT_CHARS]


def json_view(value: Any) -> str:
    """Indented JSON of a value (what an unknown entry or message shows)."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def path_edits(
    entries: list[dict[str, Any]],
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """({target id: the edit that wins}, [edits overridden by a later one]) of the
    `context_edit` entries in `entries` (in context order): the latest edit of a
    target wins, as in pi 1.6.0."""
    winning: dict[str, dict[str, Any]] = {}
    overridden: list[dict[str, Any]] = []
    for entry in entries:
        if entry.get("type") != "context_edit":
            continue
        target = entry.get("targetId")
        if not isinstance(target, str):
            continue
        if target in winning:
            overridden.append(winning[target])
        winning[target] = entry
    return winning, overridden
