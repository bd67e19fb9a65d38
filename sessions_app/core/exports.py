"""Export helpers on plain pi entries: the static tree's rows and the Markdown of a branch.

Pure (no Django): the share-link page and the HTML/Markdown exports build on these.

Public API
----------
- ``tree_rows(entries, branch_ids=())`` -> flat rows for a static tree (indent only at forks)
- ``branch_markdown(header, path, title=None)`` -> Markdown of one branch (for a PR)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from .compare import _message
from .input_limits import (
    MAX_ID_CHARS,
    MAX_NAME_CHARS,
    bounded,
    display_value,
)
from .markdown_safe import escape_raw_html
from .preview import entry_preview, entry_role, entry_text
from .tool_headline import (
    answered_headline,
    call_headlines,
    headlines_from_preview,
    text_before_calls,
    tool_headline,
)
from .tree import SessionTree

__all__ = [
    "branch_markdown",
    "tree_rows",
]

MD_OUTPUT_CHARS = 4000  # tool output kept per block in the Markdown export
MD_TEXT_CHARS = 200_000  # message text / summary kept per block (the JSONL has it all)
MD_FIELD_CHARS = 300  # a header field (cwd) in the Markdown export


def tree_rows(
    entries: list[dict[str, Any]],
    branch_ids: Iterable[str] = (),
    labels: dict[str, Any] | None = None,
    *,
    max_children: int | None = None,
    children_page: tuple[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Pre-order rows ``{id, parentId, depth, type, role, headline, preview, label, onBranch,
    children}``; ``headline`` is a tool row's (core/tool_headline), as the session page's
    tree reads it, and an assistant row's preview is then its words alone.

    Depth grows only where a node has more than one child, so a long linear session stays
    flat (like pi's tree view). Children are ordered by timestamp (pi's getTree).
    ``entries`` may be light dicts (``id``, ``parentId``, ``timestamp``, ``type`` plus
    precomputed ``_role`` / ``_preview``) with ``labels`` given as ``{id: label}``.

    ``max_children`` (a page; exports list everything): a node with more children lists
    that many (the one on the branch always, then the oldest), and a row
    ``{"more": N, "id": node id, "depth", "start", "prev"}`` stands for the others;
    ``children_page = (node id, start)`` lists that node's children from the
    ``start``-th instead.
    """
    branch = set(branch_ids)
    tree = SessionTree(entries)
    by_id: dict[Any, dict[str, Any]] = {}  # (filled on the first tool result)
    roots = tree.get_tree()
    rows: list[dict[str, Any]] = []
    stack: list[Any] = [(node, 1 if len(roots) > 1 else 0) for node in reversed(roots)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict) and "more" in node:
            rows.append({**node, "depth": depth})
            continue
        entry = node["entry"]
        children = node["children"]
        role, preview = _role_preview(entry)
        if role == "toolResult" and not by_id:
            by_id.update((e.get("id"), e) for e in entries)
        headline = _row_headline(entry, role, preview, by_id)
        if headline and role == "assistant":  # its words; the headline says what it ran
            preview = text_before_calls(preview)
        rows.append(
            {
                "id": entry.get("id"),
                "parentId": entry.get("parentId"),
                "depth": depth,
                "type": entry.get("type"),
                "role": role,
                "headline": headline,
                "preview": preview[:120],
                "label": (labels.get(entry.get("id")) if labels is not None else node.get("label"))
                or "",
                "onBranch": entry.get("id") in branch,
                "children": len(children),
            }
        )
        child_depth = depth + 1 if len(children) > 1 else depth
        listed, marker = children, None
        if max_children is not None and len(children) > max_children:
            listed, marker = _children_window(
                entry.get("id"), children, branch, max_children, children_page
            )
        if marker is not None:
            stack.append((marker, child_depth))
        for child in reversed(listed):
            stack.append((child, child_depth))
    return rows


def _role_preview(entry: dict[str, Any]) -> tuple[str, str]:
    """An entry's role and stored preview line (precomputed on light rows)."""
    role = entry["_role"] if "_role" in entry else entry_role(entry)
    return role, entry["_preview"] if "_preview" in entry else entry_preview(entry)


def _row_headline(
    entry: dict[str, Any], role: str, preview: str, by_id: dict[Any, dict[str, Any]]
) -> str:
    """A tool row's headline, as the session page's tree shows it: what an assistant
    message's calls did, or the call a tool result answers."""
    if role == "assistant":
        return " · ".join(headlines_from_preview(preview))
    if role != "toolResult":
        return ""

    def ancestors() -> Iterable[tuple[str, str]]:
        parent = by_id.get(entry.get("parentId"))
        while parent is not None:
            yield _role_preview(parent)
            parent = by_id.get(parent.get("parentId"))

    return answered_headline(ancestors())


def _children_window(
    node_id: str | None,
    children: list[dict[str, Any]],
    branch: set[str],
    size: int,
    page: tuple[str, int] | None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Which children of a wide node a page lists, and the row for the rest."""
    start = page[1] if page is not None and page[0] == node_id else 0
    start = max(0, min(start, len(children) - 1))
    window = children[start : start + size]
    chosen = {id(c) for c in window}
    pinned = [c for c in children if c["entry"].get("id") in branch and id(c) not in chosen]
    listed = [c for c in children if id(c) in chosen or c in pinned]
    marker = {
        "more": len(children) - len(listed),
        "id": node_id,
        "start": start + size if start + size < len(children) else None,
        "prev": max(0, start - size) if start > 0 else None,
        "total": len(children),
    }
    return listed, marker


def _fence(text: str, lang: str = "") -> str:
    text = str(text)
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{lang}\n{text}\n{fence}"


def _clip(text: str, limit: int = MD_OUTPUT_CHARS) -> str:
    text = str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit:,} more characters]"


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)] if isinstance(content, list) else []


def _code(value: Any, limit: int = MAX_ID_CHARS) -> str:
    """A short value as one inline code span, whatever backticks or newlines it holds."""
    text = " ".join(bounded(value, limit).splitlines()) or " "
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def branch_markdown(
    header: dict[str, Any], path: list[dict[str, Any]], title: str | None = None
) -> str:
    """Markdown of one branch (root → leaf) to paste into a PR description or review.

    Raw HTML from the session is escaped (`markdown_safe.escape_raw_html`), code blocks
    stay code, and lone surrogates become U+FFFD."""
    header = display_value(header)
    title = " ".join(bounded(title or header.get("id", "Session"), MAX_NAME_CHARS).splitlines())
    out = [f"# {title}", ""]
    out.append(f"- Session: {_code(header.get('id', ''))}")
    if header.get("cwd"):
        out.append(f"- Working directory: {_code(header['cwd'], MD_FIELD_CHARS)}")
    if path:
        out.append(
            f"- Branch: {_code(path[0].get('id'))} → {_code(path[-1].get('id'))} "
            f"({len(path)} entries)"
        )
    out.append("")
    calls: dict[str, str] = {}  # the headline of each call so far, by call id
    for entry in path:
        entry = display_value(entry)
        message = _message(entry)
        if message is not None and message.get("role") == "assistant":
            calls.update(call_headlines(message))
        lines = _entry_markdown(entry, calls)
        if lines is not None:  # (settings, labels, names: not part of the conversation)
            out.extend(lines)
            out.append("")
    return escape_raw_html("\n".join(out).rstrip() + "\n")


def _entry_markdown(entry: dict[str, Any], calls: dict[str, str]) -> list[str] | None:
    """The lines of one entry of the conversation, or None for the entries that are not.
    `calls`: the headline of each call made before it, by call id."""
    kind = entry.get("type")
    ident = _code(entry.get("id"))
    message = _message(entry)
    if message is not None:
        role = message.get("role")
        if role == "toolResult":
            return _tool_result_markdown(message, ident, calls)
        write = _MESSAGE_MARKDOWN.get(role) if isinstance(role, str) else None
        if write is None:
            return [f"## {_code(role)} · {ident}", "", _clip(entry_text(entry))]
        return write(message, ident)
    if kind in ("compaction", "branch_summary"):
        name = "Compaction summary" if kind == "compaction" else "Branch summary"
        return [f"## {name} · {ident}", "", _clip(entry.get("summary", ""), MD_TEXT_CHARS)]
    if kind == "custom_message":
        return [
            f"## {_code(entry.get('customType', 'custom'))} · {ident}",
            "",
            _clip(entry_text(entry)),
        ]
    return None


def _user_markdown(message: dict[str, Any], ident: str) -> list[str]:
    out = [f"## User · {ident}", ""]
    for b in _blocks(message.get("content")):
        text = _clip(b.get("text", ""), MD_TEXT_CHARS)
        out.append(text if b.get("type") == "text" else "_[image]_")
    return out


def _assistant_markdown(message: dict[str, Any], ident: str) -> list[str]:
    out = [f"## Assistant · {ident}", ""]
    for b in _blocks(message.get("content")):
        if b.get("type") == "text":
            out.append(_clip(b.get("text", ""), MD_TEXT_CHARS))
        elif b.get("type") == "toolCall":
            args = json.dumps(b.get("arguments", {}), indent=2, ensure_ascii=False)
            out.append(f"**Tool call** {_code(tool_headline(b.get('name'), b.get('arguments')))}")
            out.append("")
            out.append(_fence(_clip(args), "json"))
        out.append("")
    if message.get("stopReason") in ("error", "aborted"):
        error = " ".join(str(message.get("errorMessage") or "").splitlines())
        out.append(f"> Stopped: {message.get('stopReason')} {error}")
    return out


def _tool_result_markdown(message: dict[str, Any], ident: str, calls: dict[str, str]) -> list[str]:
    status = " (error)" if message.get("isError") else ""
    text = "\n".join(
        str(b.get("text", "")) for b in _blocks(message.get("content")) if b.get("type") == "text"
    )
    call = calls.get(str(message.get("toolCallId") or "")) or message.get("toolName", "")
    return [
        f"### Result of {_code(call, MD_FIELD_CHARS)}{status} · {ident}",
        "",
        "<details><summary>output</summary>\n\n"
        + _fence(_clip(text) or "(no output)")
        + "\n\n</details>",
    ]


def _bash_markdown(message: dict[str, Any], ident: str) -> list[str]:
    command = _code(f"$ {message.get('command', '')}", MD_OUTPUT_CHARS)
    out = [f"### {command} · {ident}", "", _fence(_clip(message.get("output") or "(no output)"))]
    if message.get("exitCode") not in (None, 0):
        out.append(f"exit code {bounded(message.get('exitCode'))}")
    return out


_MESSAGE_MARKDOWN = {
    "user": _user_markdown,
    "assistant": _assistant_markdown,
    "bashExecution": _bash_markdown,
}
