"""The ls tool: what one folder holds, folders marked with a slash."""

from __future__ import annotations

import os
import stat
from typing import Any

from sessions_app.core.truncate import DEFAULT_MAX_BYTES, LS_DEFAULT_LIMIT, ls_notice

from .. import safefs
from .base import ToolContext, ToolError, ToolResult, param, text_result
from .listing import directory_arg, limit_arg, listing_result, listing_tool


def _ls(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    directory = directory_arg(args, ctx)
    effective_limit = limit_arg(args, LS_DEFAULT_LIMIT)
    workspace = ctx.workspace
    try:
        fd = workspace.open_in_root(
            workspace.root_relative(directory), os.O_RDONLY | os.O_DIRECTORY, follow=True
        )
        try:
            names = safefs.names_in(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise ToolError(f"Cannot read directory: {exc.strerror or exc}") from None
    names.sort(key=lambda n: (n.lower(), n))
    results: list[str] = []
    limit_reached = False
    for name in names:
        if len(results) >= effective_limit:
            limit_reached = True
            break
        rel = workspace.root_relative(os.path.join(directory, name))
        suffix = ""
        try:  # a symlink counts as a directory only when it leads to one inside
            entry_fd = workspace.open_in_root(rel, os.O_PATH, follow=True)
            try:
                suffix = "/" if stat.S_ISDIR(os.fstat(entry_fd).st_mode) else ""
            finally:
                os.close(entry_fd)
        except OSError:
            pass
        results.append(name + suffix)
    if not results:
        return text_result("(empty directory)")
    cap = effective_limit if limit_reached else None
    details: dict[str, Any] = {"entryLimitReached": cap} if cap else {}
    return listing_result(results, details, lambda cut: ls_notice(cap, cut))


LS = listing_tool(
    name="ls",
    description=(
        "Show what a folder holds, in alphabetical order, hidden entries included; folders "
        f"end with '/'. At most {LS_DEFAULT_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB "
        "come back."
    ),
    properties={
        "path": param("string", "The folder (the working directory if left out)"),
    },
    required=[],
    limit_help=f"Most entries to return ({LS_DEFAULT_LIMIT} if left out)",
    execute=_ls,
    snippet="List the entries of a folder",
)
