"""The read tool: a text file's lines (paged with offset and limit) or an image."""

from __future__ import annotations

import base64
import os
import stat
from typing import Any

from sessions_app.core.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, read_output_text

from .. import safefs
from .base import (
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    check_size,
    param,
    schema,
    text_result,
)

MAX_IMAGE_BYTES = 20 * 1024 * 1024

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime_type(head: bytes) -> str | None:
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _read(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path = args["path"]
    try:
        fd, _absolute = ctx.workspace.open_fd(
            path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY, for_read=True
        )
    except FileNotFoundError:
        raise ToolError(f"File not found: {path}") from None
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        os.close(fd)
        raise ToolError(f"{path} is a directory, not a file. Use ls to list it.")
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ToolError(f"{path} is not a regular file.")
    size = info.st_size
    with safefs.reader(fd) as fh:
        head = fh.read(16)
        mime = image_mime_type(head)
        if mime:
            if size > MAX_IMAGE_BYTES:
                raise ToolError(f"Image {path} is too large ({size} bytes).")
            data = head + fh.read()
            ctx.check_abort()
            return ToolResult(
                [
                    {"type": "text", "text": f"Read image file [{mime}]"},
                    {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": mime},
                ]
            )
        check_size(path, size, ctx, "read")
        raw = head + fh.read()
    ctx.check_abort()
    text = raw.decode("utf-8", errors="replace")
    offset = args.get("offset")
    limit = args.get("limit")
    offset = int(offset) if offset is not None else None
    limit = int(limit) if limit is not None else None
    try:
        output, truncation = read_output_text(text, path, offset, limit)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    details = {"truncation": truncation.to_pi_dict()} if truncation is not None else None
    return text_result(output, details)


READ = Tool(
    name="read",
    description=(
        "Show a file. Text comes back as it is; an image (PNG, JPEG, GIF "
        "or WebP) comes back as an attachment. A text answer stops after "
        f"{DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB, whichever comes first, "
        "and then says which offset continues it: page through a long file with offset and "
        "limit until you have what you need."
    ),
    parameters=schema(
        {
            "path": param("string", "The file, relative to the working directory or absolute"),
            "offset": param("number", "First line to show, counting from 1"),
            "limit": param("number", "How many lines to show at most"),
        },
        ["path"],
    ),
    execute=_read,
    read_only=True,
    snippet="Show the contents of a file (text or image)",
    guidelines=("Look at files with read rather than with cat or sed in bash.",),
)
