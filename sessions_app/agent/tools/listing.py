"""What grep, find and ls share: the walk beneath the workspace root (``.gitignore``
respected, no symlink followed out), the ``limit`` argument, and the answer cut at the
byte cap with pi's notice and details.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from typing import Any

import pathspec

from sessions_app.core.truncate import append_notice, truncate_head

from .. import safefs
from ..paths import Workspace
from .base import Tool, ToolContext, ToolError, ToolResult, param, schema, text_result

BIG = 2**53 - 1  # "no line limit" (JS Number.MAX_SAFE_INTEGER)


class _Ignores:
    """.gitignore rules from the workspace root down to the directory being walked."""

    def __init__(self, workspace: Workspace):
        self.workspace = workspace
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}

    def _spec(self, directory: str) -> pathspec.GitIgnoreSpec | None:
        if directory not in self._specs:
            spec = None
            gitignore = os.path.join(directory, ".gitignore")
            try:
                text = read_in_root(self.workspace, gitignore, follow=False)
                spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
            except OSError:
                pass
            self._specs[directory] = spec
        return self._specs[directory]

    def ignored(self, path: str, is_dir: bool) -> bool:
        root = self.workspace.root
        directory = os.path.dirname(path)
        chain = []
        while True:
            chain.append(directory)
            if directory == root or len(directory) <= len(root):
                break
            directory = os.path.dirname(directory)
        for base in chain:
            spec = self._spec(base)
            if spec is None:
                continue
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            if is_dir:
                rel += "/"
            if spec.match_file(rel):
                return True
        return False


def read_in_root(
    workspace: Workspace, path: str, *, follow: bool, max_bytes: int | None = None
) -> str:
    """The text of the regular file ``path`` (a real path under the root), opened beneath
    the root; OSError when it is missing, not regular, too big or leads outside."""
    fd = workspace.open_in_root(
        workspace.root_relative(path), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY, follow=follow
    )
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"not a regular file: {path}")
        if max_bytes is not None and info.st_size > max_bytes:
            raise OSError(f"too large: {path}")
        return safefs.read_all(fd).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def walk(start: str, ctx: ToolContext, *, include_dirs: bool = False) -> Iterator[tuple[str, bool]]:
    """(path, is_dir) under ``start`` in sorted order: .git skipped, .gitignore respected,
    hidden files included. Directories are listed through descriptors opened beneath the
    workspace root with no symlink followed, so a walk never leaves the workspace, even
    when a directory is swapped for a symlink while it runs. A symlink is reported only
    when it points inside the workspace, and never descended into."""
    workspace = ctx.workspace
    ignores = _Ignores(workspace)
    stack = [start]
    while stack:
        ctx.check_abort()
        directory = stack.pop()
        try:
            fd = workspace.open_in_root(
                workspace.root_relative(directory), os.O_RDONLY | os.O_DIRECTORY, follow=False
            )
        except OSError:
            continue
        try:
            entries = safefs.entries_in(fd)
        except OSError:
            continue
        finally:
            os.close(fd)
        subdirs = []
        for name, is_dir, is_link in entries:
            if name == ".git":
                continue
            path = os.path.join(directory, name)
            try:
                if is_link:
                    target = workspace.open_in_root(
                        workspace.root_relative(path), os.O_PATH, follow=True
                    )
                    try:
                        if stat.S_ISDIR(os.fstat(target).st_mode):
                            continue  # never descend through symlinks
                    finally:
                        os.close(target)
            except OSError:
                continue  # gone, or points outside the workspace
            if ignores.ignored(path, is_dir):
                continue
            if is_dir:
                subdirs.append(path)
                if include_dirs:
                    yield path, True
            else:
                yield path, False
        stack.extend(reversed(subdirs))


def glob_spec(pattern: str) -> pathspec.PathSpec[Any]:
    return pathspec.PathSpec.from_lines("gitwildmatch", [pattern])


def limit_arg(args: dict[str, Any], default: int) -> int:
    limit = args.get("limit")
    return max(1, int(limit)) if limit is not None else default


def listing_tool(
    *,
    name: str,
    description: str,
    properties: dict[str, Any],
    required: list[str],
    limit_help: str,
    execute: Callable[[dict[str, Any], ToolContext], ToolResult],
    snippet: str,
) -> Tool:
    """grep, find or ls: read-only, at most ``limit`` items (the last parameter)."""
    return Tool(
        name=name,
        description=description,
        parameters=schema({**properties, "limit": param("number", limit_help)}, required),
        execute=execute,
        read_only=True,
        snippet=snippet,
    )


def listing_result(
    lines: list[str],
    limit_details: dict[str, Any],
    notice: Callable[[bool], str | None],
    more_details: dict[str, Any] | None = None,
) -> ToolResult:
    """A grep, find or ls answer: the lines cut at the byte cap, with the notice
    (``notice(bytes_truncated)``) and pi's details in pi's key order."""
    truncation = truncate_head("\n".join(lines))
    details = dict(limit_details)
    if truncation.truncated:
        details["truncation"] = truncation.to_pi_dict()
    details.update(more_details or {})
    return text_result(append_notice(truncation.content, notice(truncation.truncated)), details)


def directory_arg(args: dict[str, Any], ctx: ToolContext) -> str:
    """The real path of the ``path`` argument, which must be a directory in the workspace."""
    directory = ctx.workspace.resolve(args.get("path") or ".")
    try:
        with ctx.workspace.open(args.get("path") or ".", os.O_PATH) as (fd, _):
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                raise ToolError(f"Not a directory: {directory}")
    except FileNotFoundError:
        raise ToolError(f"Path not found: {directory}") from None
    return directory
