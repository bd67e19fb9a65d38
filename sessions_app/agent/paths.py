"""Workspace containment: tools never touch anything outside the session's workspace.

A path given by the model is resolved against the cwd (``~`` and absolute paths are
accepted as written), then its real path (symlinks resolved, ``..`` collapsed) must lie
inside the real path of the workspace root. Anything else is refused with a clear error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable


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


def output_file_factory(directory: str, prefix: str) -> Callable[[], str]:
    """A callable giving a fresh ``<directory>/<prefix>-<random hex>.log`` path (the one
    naming rule for full-output files of the agent's and the user's bash runs)."""

    def make() -> str:
        os.makedirs(directory, exist_ok=True)
        return os.path.join(directory, f"{prefix}-{os.urandom(8).hex()}.log")

    return make


def user_areas(roots: Iterable[str | os.PathLike[str]], owner_key: str) -> list[str]:
    """Each root's folder for one user (``<root>/<owner_key>``): users never share one."""
    key = str(owner_key)
    if not key or key in (".", "..") or os.sep in key or (os.altsep and os.altsep in key):
        raise WorkspaceError(f"Invalid workspace owner key {key!r}.")
    return [os.path.join(_real(os.fspath(r)), key) for r in roots]


def check_cwd(
    cwd: str,
    roots: Iterable[str | os.PathLike[str]],
    *,
    owner_key: str | None = None,
    create: bool = False,
) -> str:
    """The real path of ``cwd`` when it lies inside one of ``roots``; else WorkspaceError.

    With ``owner_key`` (the session owner's pk) the cwd must lie inside that user's own
    folder of a root (``<root>/<owner_key>/...``), never another user's nor the root itself.
    With ``create`` a missing cwd inside the allowed area is created.
    """
    if not cwd:
        raise WorkspaceError("This session has no working directory.")
    if not os.path.isabs(cwd):
        raise WorkspaceError(f"The working directory must be an absolute path, not {cwd!r}.")
    real = _real(cwd)
    roots = list(roots)
    real_roots = [_real(os.fspath(r)) for r in roots]
    areas = [_real(a) for a in user_areas(roots, owner_key)] if owner_key is not None else []
    owner_dirs = ", ".join(areas)
    where = f"; it must be inside a workspace root's folder for the session owner ({owner_dirs})"
    where = where if areas else ""
    if not any(is_within(real, r) for r in real_roots):
        raise WorkspaceError(
            f"Working directory {cwd} is outside the allowed workspace roots "
            f"({', '.join(real_roots) or 'none configured'}){where}."
        )
    if owner_key is not None and not any(is_within(real, a) for a in areas):
        raise WorkspaceError(
            f"Working directory {cwd} is outside your workspace area{where}: one user's "
            "session never runs in another user's folder nor in the root itself."
        )
    if create and not os.path.exists(real):
        os.makedirs(real, exist_ok=True)
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
