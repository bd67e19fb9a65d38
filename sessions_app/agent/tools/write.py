"""The write tool: a whole file's new text, missing folders created."""

from __future__ import annotations

import os
from typing import Any

from sessions_app.core.jsutil import utf16_len

from .. import safefs
from ..shell import write_refusal
from .base import Tool, ToolContext, ToolError, ToolResult, param, schema, text_result


def _write(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path, content = args["path"], args["content"]
    if problem := write_refusal(ctx.bash_guard, f"write {path}"):
        raise ToolError(problem)
    ctx.workspace.make_parents(path)
    ctx.check_abort()
    data = content.encode("utf-8", errors="surrogatepass")
    try:
        fd, _ = ctx.workspace.open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY)
    except IsADirectoryError:
        raise ToolError(f"{path} is a directory.") from None
    try:
        if not safefs.is_regular(fd):
            raise ToolError(f"{path} is not a regular file.")
        os.ftruncate(fd, 0)
        safefs.write_all(fd, data)
    finally:
        os.close(fd)
    return text_result(f"Successfully wrote {utf16_len(content)} bytes to {path}")


WRITE = Tool(
    name="write",
    description=(
        "Put the given text in a file, replacing whatever it held; a missing file is "
        "created, and so are missing folders on its path."
    ),
    parameters=schema(
        {
            "path": param("string", "The file, relative to the working directory or absolute"),
            "content": param("string", "The file's complete new text"),
        },
        ["path", "content"],
    ),
    execute=_write,
    snippet="Write a whole file (a new one, or a full replacement)",
    guidelines=("Keep write for new files and complete rewrites; use edit for changes.",),
)
