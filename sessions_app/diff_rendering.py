"""Unified diffs as HTML: one table row per line, the code coloured by Pygments.

Pygments escapes every piece of text it is given, and emits class names only (no style
attribute), so the CSP's style rules hold; the colours are in static/piweb/diff.css.
"""

from __future__ import annotations

import re

from django.utils.html import escape
from django.utils.safestring import mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from sessions_app.core.file_changes import FileChange

MAX_LINES = 3000
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_HEADERS = ("diff --git ", "index ", "--- ", "+++ ")
_FORMATTER = HtmlFormatter(nowrap=True, classprefix="hl-")


def _lexer(path: str):
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except (ClassNotFound, ValueError):
        return TextLexer(stripnl=False, ensurenl=False)


def rows(change: FileChange) -> list[dict]:
    """The diff's lines: kind (add, del, ctx, hunk, meta), old and new numbers, html."""
    lines = change.diff.splitlines()[:MAX_LINES]
    started = False
    parsed: list[tuple[str, str]] = []
    for line in lines:
        if not started and line.startswith(_HEADERS):
            continue  # the file's name and kind are in the summary above the table
        if line.startswith("@@"):
            started = True
            parsed.append(("hunk", line))
        elif not started or line.startswith("\\"):
            parsed.append(("meta", line))
        elif line.startswith("+"):
            parsed.append(("add", line[1:]))
        elif line.startswith("-"):
            parsed.append(("del", line[1:]))
        else:
            parsed.append(("ctx", line[1:]))
    code = [text for kind, text in parsed if kind in ("add", "del", "ctx")]
    coloured: list[str] = []
    if code:
        html = highlight("\n".join(code) + "\n", _lexer(change.path), _FORMATTER)
        coloured = html.split("\n")
    out, i, old_no, new_no = [], 0, 0, 0
    for kind, text in parsed:
        row: dict[str, str | int] = {"kind": kind, "old": "", "new": ""}
        if kind in ("add", "del", "ctx"):
            row["html"] = mark_safe(coloured[i] if i < len(coloured) else escape(text))
            i += 1
            if kind != "add":
                old_no += 1
                row["old"] = old_no
            if kind != "del":
                new_no += 1
                row["new"] = new_no
        else:
            row["html"] = escape(text)
            match = _HUNK.match(text) if kind == "hunk" else None
            if match:
                old_no, new_no = int(match.group(1)) - 1, int(match.group(2)) - 1
        out.append(row)
    return out


def render_changes(changes: list[FileChange]) -> list[dict]:
    """Each file with its rows, for the changes templates."""
    return [
        {
            "change": change,
            "rows": [] if change.binary else rows(change),
            "cut": len(change.diff.splitlines()) > MAX_LINES,
        }
        for change in changes
    ]
