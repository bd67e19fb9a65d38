"""Branch comparison on plain pi entries: the stats of a branch and how two branches differ.

Pure (no Django): the compare page and the compare-summary job build on these.

Public API
----------
- ``compare_branches(entries, a_id, b_id)`` -> ``{"ancestorId", "ancestorPath", "a", "b"}``
  where each side is ``branch_stats(segment)``
- ``branch_stats(segment)`` -> tokens, files touched, outcome (last assistant text, errors)
- ``offline_difference_summary(comparison)`` -> a short extractive text (no model)
"""

from __future__ import annotations

from typing import Any

from .compaction import FileOps, compute_file_lists, extract_file_ops_from_message
from .input_limits import js_number
from .jsutil import js_number_to_string
from .preview import entry_text
from .tokens import estimate_tokens
from .tree import SessionTree

__all__ = [
    "branch_stats",
    "compare_branches",
    "offline_difference_summary",
]


def _message(entry: dict[str, Any]) -> dict[str, Any] | None:
    if entry.get("type") != "message":
        return None
    message = entry.get("message")
    return message if isinstance(message, dict) else None


def _first_line(text: str, limit: int = 200) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def branch_stats(segment: list[dict[str, Any]]) -> dict[str, Any]:
    """Token totals, files touched and outcome of a list of entries (root-first)."""
    usage: dict[str, float] = {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
    }
    estimated = 0
    file_ops = FileOps()
    errors: list[dict[str, Any]] = []
    last_assistant = ""
    last_stop = ""
    counts = {"user": 0, "assistant": 0, "toolCalls": 0, "toolResults": 0, "bash": 0}
    for entry in segment:
        if entry.get("type") in ("compaction", "branch_summary"):
            file_ops.add_details(entry.get("details"))
        message = _message(entry)
        if message is None:
            continue
        role = message.get("role")
        estimated += estimate_tokens(message)
        if role == "user":
            counts["user"] += 1
        elif role == "assistant":
            counts["assistant"] += 1
            extract_file_ops_from_message(message, file_ops)
            content = message.get("content")
            if not isinstance(content, list):
                content = []
            counts["toolCalls"] += sum(
                1 for b in content if isinstance(b, dict) and b.get("type") == "toolCall"
            )
            reported = message.get("usage")
            for key in usage:
                # Summed as pi sums them: JSON numbers are doubles (1e999 is Infinity).
                value = js_number(reported.get(key)) if isinstance(reported, dict) else None
                if value is not None:
                    usage[key] += value
            text = "\n".join(
                str(b.get("text", ""))
                for b in content
                if isinstance(b, dict) and b.get("type") == "text"
            ).strip()
            if text:
                last_assistant = text
            last_stop = str(message.get("stopReason") or "")
            if message.get("stopReason") in ("error", "aborted") or message.get("errorMessage"):
                errors.append(
                    {
                        "id": entry.get("id"),
                        "kind": f"assistant {message.get('stopReason') or 'error'}",
                        "text": _first_line(message.get("errorMessage") or ""),
                    }
                )
        elif role == "toolResult":
            counts["toolResults"] += 1
            if message.get("isError"):
                errors.append(
                    {
                        "id": entry.get("id"),
                        "kind": f"{message.get('toolName') or 'tool'} failed",
                        "text": _first_line(entry_text(entry)),
                    }
                )
        elif role == "bashExecution":
            counts["bash"] += 1
            code = message.get("exitCode")
            if message.get("cancelled") or code not in (None, 0):
                errors.append(
                    {
                        "id": entry.get("id"),
                        "kind": "bash cancelled" if message.get("cancelled") else f"exit {code}",
                        "text": _first_line(message.get("command") or ""),
                    }
                )
    files = compute_file_lists(file_ops)
    return {
        "entries": len(segment),
        "counts": counts,
        "usage": usage,
        "estimatedTokens": estimated,
        "readFiles": files["readFiles"],
        "modifiedFiles": files["modifiedFiles"],
        "lastAssistantText": last_assistant,
        "lastStopReason": last_stop,
        "errors": errors,
    }


def compare_branches(entries: list[dict[str, Any]], a_id: str, b_id: str) -> dict[str, Any]:
    """Common ancestor of two nodes and the two branches below it, with their stats."""
    tree = SessionTree(entries)
    for node_id in (a_id, b_id):
        if tree.get_entry(node_id) is None:
            raise KeyError(node_id)
    ancestor = tree.common_ancestor(a_id, b_id)
    a_path = tree.get_branch(a_id)
    b_path = tree.get_branch(b_id)

    def below(path: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if ancestor is None:
            return path
        ids = [e.get("id") for e in path]
        return path[ids.index(ancestor) + 1 :]

    ancestor_path = tree.get_branch(ancestor) if ancestor else []
    a_segment, b_segment = below(a_path), below(b_path)
    return {
        "ancestorId": ancestor,
        "ancestorPath": ancestor_path,
        "a": {"id": a_id, "segment": a_segment, "stats": branch_stats(a_segment)},
        "b": {"id": b_id, "segment": b_segment, "stats": branch_stats(b_segment)},
    }


def offline_difference_summary(comparison: dict[str, Any]) -> str:
    """A short, extractive description of how two branches differ (no language model)."""
    lines = ["(Offline comparison: extracted from the two branches, no model was used.)", ""]
    a, b = comparison["a"]["stats"], comparison["b"]["stats"]
    for name, side, other in (("A", a, b), ("B", b, a)):
        ident = comparison[name.lower()]["id"]
        lines.append(f"Branch {name} (ends at {ident}):")
        lines.append(
            f"- {side['entries']} entries, {side['counts']['toolCalls']} tool calls, "
            f"{js_number_to_string(side['usage']['totalTokens'])} reported tokens "
            f"(~{side['estimatedTokens']} estimated), {len(side['errors'])} errors."
        )
        only_mod = [p for p in side["modifiedFiles"] if p not in other["modifiedFiles"]]
        if only_mod:
            lines.append("- Modified only here: " + ", ".join(only_mod[:20]))
        if side["errors"]:
            last = side["errors"][-1]
            lines.append(f"- Last error: {last['kind']}: {last['text']}")
        if side["lastAssistantText"]:
            lines.append("- Ends with: " + _first_line(side["lastAssistantText"], 300))
        lines.append("")
    both = sorted(set(a["modifiedFiles"]) & set(b["modifiedFiles"]))
    if both:
        lines.append("Both branches modified: " + ", ".join(both[:20]))
    fewer = "A" if len(a["errors"]) < len(b["errors"]) else "B"
    if len(a["errors"]) != len(b["errors"]):
        lines.append(f"Branch {fewer} ran into fewer errors.")
    return "\n".join(lines).strip() + "\n"
