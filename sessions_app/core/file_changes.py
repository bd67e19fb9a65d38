"""File changes reconstructed from a session's `edit` and `write` tool calls (no Django).

For a session that piweb did not run (imported from pi), the only record of what the
agent changed is the arguments of its file tools. This module replays them along a path:

- ``write {path, content}`` sets the file's content;
- ``edit {path, edits: [{oldText, newText}]}`` (pi 0.80.2) or the older
  ``edit {path, oldText, newText}`` replaces each old text once.

A file whose content is known (written earlier on the path) gets a real unified diff,
made by ``difflib``; an edit of a file never written on the path shows each replacement
as a hunk without line numbers, and is marked ``partial``. Every change found here is
marked ``reconstructed``: what bash commands did is unknown. Calls whose tool result
says they failed change nothing.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from typing import Any

FILE_TOOLS = ("edit", "write")


@dataclass
class FileChange:
    path: str
    status: str  # "added" | "modified" | "deleted" | "renamed" | "written"
    added: int = 0
    removed: int = 0
    diff: str = ""
    binary: bool = False
    old_path: str = ""
    reconstructed: bool = False
    partial: bool = False  # the content before is unknown: hunks without line numbers
    truncated: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Pending:
    path: str
    before: str | None
    after: str | None
    hunks: list[tuple[str, str]] = field(default_factory=list)


def edits_of(arguments: dict[str, Any]) -> list[tuple[str, str]]:
    """The (oldText, newText) pairs of an edit call, in both of pi's argument shapes."""
    if not isinstance(arguments, dict):
        return []
    edits = arguments.get("edits")
    pairs: list[tuple[str, str]] = []
    if isinstance(edits, list):
        for item in edits:
            if isinstance(item, dict) and isinstance(item.get("oldText"), str):
                pairs.append((item["oldText"], str(item.get("newText") or "")))
    elif isinstance(arguments.get("oldText"), str):
        pairs.append((arguments["oldText"], str(arguments.get("newText") or "")))
    return pairs


def apply_edits(content: str, pairs: list[tuple[str, str]]) -> str | None:
    """``content`` with each old text replaced once, in order; None when one is missing."""
    for old, new in pairs:
        if not old or old not in content:
            return None
        content = content.replace(old, new, 1)
    return content


def normalize_path(raw: str, cwd: str = "") -> str:
    """The call's path as shown: relative to the session's cwd when it lies inside it."""
    path = raw.strip()
    if path.startswith("@"):
        path = path[1:]
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        path = path[len(cwd.rstrip("/")) + 1 :]
    while path.startswith("./"):
        path = path[2:]
    return path


def count_lines(diff: str) -> tuple[int, int]:
    """Added and removed lines of a unified diff (its ---/+++ headers excluded)."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+++") or line.startswith("---"):
            continue
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def unified(before: str, after: str, path: str, *, created: bool = False) -> str:
    """A git-style unified diff of one file's two texts."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile="/dev/null" if created else f"a/{path}",
        tofile=f"b/{path}",
        n=3,
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _hunks_diff(path: str, hunks: list[tuple[str, str]]) -> str:
    out = [f"--- a/{path}\n", f"+++ b/{path}\n"]
    for old, new in hunks:
        out.append("@@ (reconstructed edit; line numbers unknown) @@\n")
        out.extend(f"-{line}\n" for line in old.splitlines())
        out.extend(f"+{line}\n" for line in new.splitlines())
    return "".join(out)


def tool_results(payloads: list[dict[str, Any]]) -> dict[str, bool]:
    """toolCallId → is_error, from the toolResult messages among ``payloads``."""
    results: dict[str, bool] = {}
    for payload in payloads:
        message = payload.get("message") if payload.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "toolResult":
            results[str(message.get("toolCallId"))] = bool(message.get("isError"))
    return results


def file_calls(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The edit and write tool calls of an assistant message entry."""
    if payload.get("type") != "message":
        return []
    message = payload.get("message") or {}
    if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
        return []
    return [
        block
        for block in message["content"]
        if isinstance(block, dict)
        and block.get("type") == "toolCall"
        and block.get("name") in FILE_TOOLS
        and isinstance(block.get("arguments"), dict)
        and isinstance(block["arguments"].get("path"), str)
    ]


def replay_entry(
    payload: dict[str, Any], files: dict[str, str | None], results: dict[str, bool], cwd: str = ""
) -> tuple[list[FileChange], dict[str, str | None]]:
    """The changes one assistant entry's edit/write calls made, given the file contents
    known before it (path → text, None: unknown); and the contents known after it (a new
    dict: ``files`` is left as it was, so branches can share their ancestors' state)."""
    calls = file_calls(payload)
    if not calls:
        return [], files
    after_files = dict(files)
    pending: dict[str, _Pending] = {}
    for block in calls:
        if results.get(str(block.get("id")), False):
            continue  # the tool said it failed: nothing changed
        args = block["arguments"]
        path = normalize_path(args["path"], cwd)
        item = pending.get(path)
        if item is None:
            known = after_files.get(path)
            item = _Pending(path, known, known)
            pending[path] = item
        if block["name"] == "write":
            content = args.get("content")
            item.after = content if isinstance(content, str) else ""
            item.hunks = []
        else:
            pairs = edits_of(args)
            if item.after is not None:
                applied = apply_edits(item.after, pairs)
                if applied is None:  # the text we know is not what the file held
                    item.before = item.after = None
                    item.hunks = list(pairs)
                else:
                    item.after = applied
            else:
                item.hunks.extend(pairs)
        after_files[path] = item.after
    out = []
    for path, item in pending.items():
        if item.after is not None and item.before is not None:
            diff = unified(item.before, item.after, path)
            status, partial = "modified", False
        elif item.after is not None:  # written over content never seen on the path
            diff = unified("", item.after, path, created=True)
            status, partial = "written", True
        else:
            diff = _hunks_diff(path, item.hunks)
            status, partial = "modified", True
        if not diff:
            continue
        added, removed = count_lines(diff)
        out.append(
            FileChange(
                path=path,
                status=status,
                added=added,
                removed=removed,
                diff=diff,
                reconstructed=True,
                partial=partial,
            )
        )
    return out, after_files


def reconstruct(payloads: list[dict[str, Any]], cwd: str = "") -> dict[str, list[FileChange]]:
    """Entry id → the file changes its edit/write calls made, replayed along ``payloads``
    (one path, root first; tool results may follow the last assistant entry)."""
    results = tool_results(payloads)
    files: dict[str, str | None] = {}
    changes: dict[str, list[FileChange]] = {}
    for payload in payloads:
        found, files = replay_entry(payload, files, results, cwd)
        if found:
            changes[str(payload.get("id"))] = found
    return changes


def reconstruct_tree(
    entries: list[tuple[str, str | None, dict[str, Any]]], results: dict[str, bool], cwd: str = ""
) -> dict[str, list[FileChange]]:
    """Like :func:`reconstruct` for a whole tree at once: ``entries`` are (id, the id of
    its nearest ancestor among ``entries`` or None, payload), ancestors first. Each
    branch replays its own path: a write on one branch is not known on another."""
    states: dict[str, dict[str, str | None]] = {}
    changes: dict[str, list[FileChange]] = {}
    for entry_id, ancestor, payload in entries:
        before = states.get(ancestor, {}) if ancestor else {}
        found, states[entry_id] = replay_entry(payload, before, results, cwd)
        if found:
            changes[entry_id] = found
    return changes


def summarize(changes: list[FileChange]) -> dict[str, Any]:
    """Counts for a tree row or a card: files, added and removed lines."""
    return {
        "files": len(changes),
        "added": sum(c.added for c in changes),
        "removed": sum(c.removed for c in changes),
    }
