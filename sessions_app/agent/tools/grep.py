"""The grep tool: lines that match a pattern, with context, in pi's path:line: form."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any

from sessions_app.core.truncate import (
    DEFAULT_MAX_BYTES,
    GREP_DEFAULT_LIMIT,
    grep_notice,
    truncate_line,
)

from .. import edits as edit_text
from .base import ToolContext, ToolError, ToolResult, param, text_result
from .listing import glob_spec, limit_arg, listing_result, listing_tool, read_in_root, walk

MAX_GREP_FILE_BYTES = 64 * 1024 * 1024


@dataclass
class _GrepHits:
    """The lines grep gives back, and what was cut on the way."""

    limit: int
    context: int
    out: list[str] = field(default_factory=list)
    matches: int = 0
    lines_truncated: bool = False

    @property
    def limit_reached(self) -> bool:
        return self.matches >= self.limit

    def search(self, name: str, lines: list[str], regex: re.Pattern[str]) -> None:
        """Each match in one file with its context lines, until the limit."""
        for number, line in enumerate(lines, start=1):
            if not regex.search(line):
                continue
            self.matches += 1
            first = max(1, number - self.context) if self.context else number
            last = min(len(lines), number + self.context) if self.context else number
            for current in range(first, last + 1):
                cut = truncate_line(lines[current - 1].replace("\r", ""))
                self.lines_truncated = self.lines_truncated or cut.was_truncated
                sep = ":" if current == number else "-"
                self.out.append(f"{name}{sep}{current}{sep} {cut.text}")
            if self.limit_reached:
                return


def _grep_regex(args: dict[str, Any]) -> re.Pattern[str]:
    pattern = args["pattern"]
    flags = re.IGNORECASE if args.get("ignoreCase") else 0
    source = re.escape(pattern) if args.get("literal") else pattern
    try:
        return re.compile(source, flags)
    except re.error as exc:
        raise ToolError(f"Invalid regex pattern {pattern!r}: {exc}") from None


def _text_lines(ctx: ToolContext, path: str) -> list[str] | None:
    """A file's lines for grep; None for one that cannot be read or is binary (as
    ripgrep skips it)."""
    try:
        text = read_in_root(ctx.workspace, path, follow=True, max_bytes=MAX_GREP_FILE_BYTES)
    except OSError:
        return None
    if "\x00" in text[:8192]:
        return None
    lines = edit_text.to_lf(text).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _grep(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    search = ctx.workspace.resolve(args.get("path") or ".")
    try:
        with ctx.workspace.open(args.get("path") or ".", os.O_PATH) as (fd, _):
            is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
    except FileNotFoundError:
        raise ToolError(f"Path not found: {search}") from None
    context = int(args.get("context") or 0)
    hits = _GrepHits(limit=limit_arg(args, GREP_DEFAULT_LIMIT), context=max(context, 0))
    regex = _grep_regex(args)
    glob = args.get("glob")
    name_filter = glob_spec(glob) if glob else None

    def display(path: str) -> str:
        if is_dir:
            rel = os.path.relpath(path, search)
            if rel and not rel.startswith(".."):
                return rel.replace(os.sep, "/")
        return os.path.basename(path)

    files = walk(search, ctx) if is_dir else iter([(search, False)])
    for path, _ in files:
        if hits.limit_reached:
            break
        name = display(path)
        if name_filter is not None and not name_filter.match_file(name):
            continue
        lines = _text_lines(ctx, path)
        if lines is None:
            continue
        hits.search(name, lines, regex)
        ctx.check_abort()
    if hits.matches == 0:
        return text_result("No matches found")
    cap = hits.limit if hits.limit_reached else None
    return listing_result(
        hits.out,
        {"matchLimitReached": cap} if cap else {},
        lambda cut: grep_notice(cap, cut, hits.lines_truncated),
        {"linesTruncated": True} if hits.lines_truncated else {},
    )


GREP = listing_tool(
    name="grep",
    description=(
        "Look for a regular expression (or plain text) in files and get the matching lines "
        "as path:line: text. Files that .gitignore excludes are skipped. At most "
        f"{GREP_DEFAULT_LIMIT} matches or {DEFAULT_MAX_BYTES // 1024}KB come back, and a "
        "line longer than 500 characters is cut."
    ),
    properties={
        "pattern": param("string", "What to look for: a regular expression, or text with literal"),
        "path": param("string", "A folder or a file to search (the working directory if left out)"),
        "glob": param("string", "Only files whose name matches this glob, such as '*.py'"),
        "ignoreCase": param("boolean", "Ignore upper and lower case (off if left out)"),
        "literal": param("boolean", "Take pattern as plain text, not a regular expression"),
        "context": param("number", "Lines to show before and after each match (none if left out)"),
    },
    required=["pattern"],
    limit_help=f"Most matches to return ({GREP_DEFAULT_LIMIT} if left out)",
    execute=_grep,
    snippet="Search inside files for a pattern (skips what .gitignore excludes)",
)
