"""The find tool: paths that match a glob under a folder."""

from __future__ import annotations

import os
from typing import Any

from sessions_app.core.truncate import DEFAULT_MAX_BYTES, FIND_DEFAULT_LIMIT, find_notice

from .base import ToolContext, ToolResult, param, text_result
from .listing import directory_arg, glob_spec, limit_arg, listing_result, listing_tool, walk


def _find(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = args["pattern"]
    search = directory_arg(args, ctx)
    effective_limit = limit_arg(args, FIND_DEFAULT_LIMIT)
    spec = glob_spec(pattern)
    by_path = "/" in pattern.rstrip("/")
    results: list[str] = []
    for path, is_dir in walk(search, ctx, include_dirs=True):
        rel = os.path.relpath(path, search).replace(os.sep, "/")
        subject = rel if by_path else os.path.basename(path)
        if spec.match_file(subject + ("/" if is_dir and not by_path else "")) or spec.match_file(
            subject
        ):
            results.append(rel + ("/" if is_dir else ""))
            if len(results) >= effective_limit:
                break
    if not results:
        return text_result("No files found matching pattern")
    limit_reached = effective_limit if len(results) >= effective_limit else None
    details: dict[str, Any] = {"resultLimitReached": limit_reached} if limit_reached else {}
    return listing_result(results, details, lambda cut: find_notice(limit_reached, cut))


FIND = listing_tool(
    name="find",
    description=(
        "List the files whose path matches a glob, relative to the folder searched. Files "
        f"that .gitignore excludes are skipped. At most {FIND_DEFAULT_LIMIT} paths or "
        f"{DEFAULT_MAX_BYTES // 1024}KB come back."
    ),
    properties={
        "pattern": param("string", "The glob, such as '*.py', '**/*.json' or 'src/**/test_*.py'"),
        "path": param("string", "The folder to search (the working directory if left out)"),
    },
    required=["pattern"],
    limit_help=f"Most paths to return ({FIND_DEFAULT_LIMIT} if left out)",
    execute=_find,
    snippet="Find files by name with a glob (skips what .gitignore excludes)",
)
