"""Workspace containment: tools never touch anything outside the session's workspace.

A path given by the model is resolved against the cwd (``~`` and absolute paths are
accepted as written), then its real path (symlinks resolved, ``..`` collapsed) must lie
inside the real path of the workspace root. Anything else is refused with a clear error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable


class WorkspaceError(ValueError):
    """A path outside the workspace, or a cwd outside every allowed root."""


def _real(path: str) -> str:
    return os.path.realpath(path)


def is_within(path: str, root: str) -> bool:
    """True when ``path`` (already real) is ``root`` or below it (already real)."""
    if path == root:
        return True
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path.startswith(prefix)


def check_cwd(cwd: str, roots: Iterable[str | os.PathLike[str]]) -> str:
    """The real path of ``cwd`` when it lies inside one of ``roots``; else WorkspaceError."""
    if not cwd:
        raise WorkspaceError("This session has no working directory.")
    real = _real(cwd)
    real_roots = [_real(os.fspath(r)) for r in roots]
    if not any(is_within(real, r) for r in real_roots):
        raise WorkspaceError(
            f"Working directory {cwd} is outside the allowed workspace roots "
            f"({', '.join(real_roots) or 'none configured'})."
        )
    if not os.path.isdir(real):
        raise WorkspaceError(f"Working directory does not exist: {cwd}")
    return real


class Workspace:
    """Resolves tool paths against ``cwd`` and keeps them inside ``root``.

    ``root`` defaults to ``cwd`` itself: the model may not leave the session's
    working directory.
    """

    def __init__(self, cwd: str, root: str | None = None, read_roots: Iterable[str] = ()):
        self.cwd = _real(cwd)
        self.root = _real(root) if root else self.cwd
        # Extra directories the read tool may read (e.g. the global skills directory).
        self.read_roots = [_real(os.fspath(r)) for r in read_roots]
        if not is_within(self.cwd, self.root):
            raise WorkspaceError(f"Working directory {cwd} is outside the workspace {self.root}.")

    def resolve(self, path: str | None, *, what: str = "Path", for_read: bool = False) -> str:
        """Absolute real path of ``path`` inside the workspace, or WorkspaceError.

        The file need not exist (write creates it): the deepest existing ancestor is
        resolved, so a symlinked parent directory that points outside is refused too.
        """
        raw = (path or ".").strip() or "."
        if "\x00" in raw:
            raise WorkspaceError(f"{what} contains a NUL byte: {raw!r}")
        expanded = os.path.expanduser(raw) if raw.startswith("~") else raw
        if expanded.startswith("@"):  # pi strips a leading @ (file mentions)
            expanded = expanded[1:]
        joined = expanded if os.path.isabs(expanded) else os.path.join(self.cwd, expanded)
        real = _real(joined)
        if for_read and any(is_within(real, r) for r in self.read_roots):
            return real
        if not is_within(real, self.root):
            raise WorkspaceError(
                f"{what} {raw} is outside the workspace {self.root}; tools may only access "
                "files inside it."
            )
        return real

    def relative(self, path: str) -> str:
        rel = os.path.relpath(path, self.cwd)
        return "." if rel == "." else rel
