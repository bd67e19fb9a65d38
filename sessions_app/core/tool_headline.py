"""What a tool call did, in one line: `$ ls -la`, `read src/app.py:1–120`,
`edit src/app.py +4 −1`, `write hello.py`, `grep TODO in src`. The one headline the tree,
the chat, the exports and search show for a call (its id and full arguments are only in
the details)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

MAX_CHARS = 200


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    more = " …" if len(lines) > 1 else ""
    return lines[0].strip() + more


def _line_count(text: str) -> int:
    return len(text.splitlines()) if text else 0


def _edits(arguments: Mapping[str, Any]) -> list[Any]:
    """The edit tool's changes: a list `edits` (also as a JSON string, as some models send
    it), or the older single oldText/newText pair."""
    edits = arguments.get("edits")
    if isinstance(edits, str):
        try:
            edits = json.loads(edits)
        except ValueError:
            edits = None
    if isinstance(edits, list):
        return [e for e in edits if isinstance(e, Mapping)]
    if "oldText" in arguments or "newText" in arguments:
        return [arguments]
    return []


def _edit(arguments: Mapping[str, Any]) -> str:
    added = removed = 0
    for change in _edits(arguments):
        added += _line_count(_text(change.get("newText")))
        removed += _line_count(_text(change.get("oldText")))
    return f"edit {_text(arguments.get('path'))} +{added} −{removed}"


def _read(arguments: Mapping[str, Any]) -> str:
    path = _text(arguments.get("path"))
    offset, limit = arguments.get("offset"), arguments.get("limit")
    if not isinstance(offset, int) and not isinstance(limit, int):
        return f"read {path}"
    start = offset if isinstance(offset, int) and offset > 0 else 1
    end = f"{start + limit - 1}" if isinstance(limit, int) and limit > 0 else ""
    return f"read {path}:{start}–{end}"


def _search(verb: str, arguments: Mapping[str, Any]) -> str:
    pattern = _text(arguments.get("pattern"))
    path = _text(arguments.get("path"))
    return f"{verb} {pattern} in {path}" if path else f"{verb} {pattern}"


def _other(name: str, arguments: Mapping[str, Any]) -> str:
    """A tool piweb does not know: its name and its first short text argument."""
    for value in arguments.values():
        if isinstance(value, str) and value.strip():
            return f"{name} {_first_line(value)}"
    return name


def tool_headline(name: object, arguments: object) -> str:
    """One line saying what a call of tool `name` with `arguments` does."""
    name = _text(name) or "tool"
    arguments = arguments if isinstance(arguments, Mapping) else {}
    if name == "bash":
        line = f"$ {_first_line(_text(arguments.get('command')))}"
    elif name == "read":
        line = _read(arguments)
    elif name == "edit":
        line = _edit(arguments)
    elif name == "write":
        line = f"write {_text(arguments.get('path'))}"
    elif name in ("grep", "find"):
        line = _search(name, arguments)
    elif name == "ls":
        line = f"ls {_text(arguments.get('path')) or '.'}"
    else:
        line = _other(name, arguments)
    line = line.rstrip()
    return line if len(line) <= MAX_CHARS else line[: MAX_CHARS - 1] + "…"


_CALL_START = re.compile(r"(?:^|(?<=\s))([A-Za-z_][\w.:-]{0,63})\(\{")
_DECODER = json.JSONDecoder()


def text_before_calls(preview: object) -> str:
    """The words of a stored preview line before its first tool call (`name({`)."""
    text = _text(preview)
    match = _CALL_START.search(text)
    return (text[: match.start()] if match else text).strip()


def headlines_from_preview(preview: object) -> list[str]:
    """The headline of each tool call in an entry's stored preview line.

    The preview column (core/preview.entry_digest) writes a call as `name({json})`, so the
    tree can show what a call did without reading the entry's payload. A call whose JSON
    was cut off by the preview's length still gets a headline from the arguments that
    survived the cut (`$ make te…`), or its bare name.
    """
    text = _text(preview)
    out: list[str] = []
    pos = 0
    while True:
        match = _CALL_START.search(text, pos)
        if match is None:
            return out
        name = match.group(1)
        start = match.end() - 1
        try:
            arguments, end = _DECODER.raw_decode(text, start)
        except ValueError:
            salvaged = _salvage(text[start:])
            if name == "edit":  # its line counts are lost with the cut
                out.append(f"edit {salvaged.get('path', '')}".rstrip())
            else:
                out.append(tool_headline(name, salvaged))
            return out
        out.append(tool_headline(name, arguments))
        pos = end


_PARTIAL = re.compile(r'"(command|path|pattern)":\s*"((?:[^"\\]|\\.)*)')


def _salvage(cut: str) -> dict[str, str]:
    """The string arguments that begin in a cut-off JSON object (each maybe cut too)."""
    found: dict[str, str] = {}
    for key, raw in _PARTIAL.findall(cut):
        try:
            value = json.loads(f'"{raw}"')
        except ValueError:
            value = raw
        found.setdefault(key, value)
    return found


def duration_text(seconds: float | None) -> str:
    """How long a call took, short: "0.4 s", "12 s", "2 min 5 s" ("" if unknown)."""
    if seconds is None or seconds < 0 or seconds != seconds:
        return ""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def call_headlines(message: object) -> dict[str, str]:
    """The headline of each tool call an assistant message makes, by call id."""
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        return {}
    return {
        _text(block.get("id")): tool_headline(block.get("name"), block.get("arguments"))
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "toolCall"
    }


def answered_headline(ancestors: Iterable[tuple[str, str]]) -> str:
    """The headline of the call a tool result answers, from the stored (role, preview) of
    its ancestors, nearest first: the k-th result after an assistant message answers its
    k-th call (pi appends the results in the calls' order). "" if none is found."""
    nth = 0
    for role, preview in ancestors:
        if role == "toolResult" and nth < 64:
            nth += 1
            continue
        if role != "assistant":
            return ""
        calls = headlines_from_preview(preview)
        return calls[nth] if nth < len(calls) else ""
    return ""
