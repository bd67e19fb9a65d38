"""Workspace containment: tools never touch anything outside the session's workspace.

A path given by the model is resolved against the cwd (``~`` and absolute paths are
accepted as written), then its real path (symlinks resolved, ``..`` collapsed) must lie
inside the real path of the workspace root, which gives a clear error early. That check
alone is a race (a command can swap a symlink in right after it), so the tools never
open by path: :meth:`Workspace.open` has the kernel open the file beneath a descriptor
of the root (``safefs.open_beneath``) and refuses, at the moment of the open, any
symlink or ``..`` that leads outside.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from . import safefs

PATH_MAX = 4096  # Linux's longest path: no real working directory is longer


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


def make_private_dir(path: str | os.PathLike[str], traverse_gid: int | None = None) -> None:
    """Create ``path`` if missing and, when this process owns it, make it its own: mode
    0700, or 0710 with group ``traverse_gid`` when that group (the sandboxed commands'
    account of a root worker, whose bubblewrap must reach the workspaces) may pass
    through it; without ``traverse_gid`` an existing group search bit is kept. Other local accounts must not reach into workspaces, artifacts or the
    var folder, nor run anything a session left there."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.stat(path)
    if st.st_uid != os.geteuid():
        return
    current = stat.S_IMODE(st.st_mode)
    if traverse_gid is None:
        # Only ever tightened: a group's search bit another process (the worker) gave
        # its sandbox account stays, everything else for group and others goes.
        mode = current & 0o710 | 0o700
    else:
        mode = 0o710
        if st.st_gid != traverse_gid:
            os.chown(path, -1, traverse_gid)
    if current != mode:
        os.chmod(path, mode)


def output_file_factory(directory: str, prefix: str) -> Callable[[], str]:
    """A callable giving a fresh ``<directory>/<prefix>-<random hex>.log`` path (the one
    naming rule for full-output files of the agent's and the user's bash runs)."""

    def make() -> str:
        make_private_dir(directory)
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
    if len(cwd) > PATH_MAX:  # (imported files can say anything; resolving it would crawl)
        raise WorkspaceError(
            f"The working directory is {len(cwd):,} characters long: no folder has such a path."
        )
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

    def __init__(
        self,
        cwd: str,
        root: str | None = None,
        read_roots: Iterable[str] = (),
        owner: tuple[int, int] | None = None,
    ):
        self.cwd = _real(cwd)
        # Host uid/gid that files the tools create must belong to (the account sandboxed
        # commands run as, when that is not the worker's own), so commands can change them.
        self.owner = owner
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

    def _outside(self, raw: str, what: str) -> WorkspaceError:
        return WorkspaceError(
            f"{what} {raw} is outside the workspace {self.root}; tools may only access "
            "files inside it."
        )

    def locate(
        self, path: str | None, *, what: str = "Path", for_read: bool = False
    ) -> tuple[str, str, str]:
        """(real path, base directory, path relative to the base as written) for ``path``.

        The relative part is kept as written (``..`` and symlinks included): the kernel
        resolves it beneath the base when the file is opened.
        """
        real = self.resolve(path, what=what, for_read=for_read)
        raw = (path or ".").strip() or "."
        expanded = os.path.expanduser(raw) if raw.startswith("~") else raw
        if expanded.startswith("@"):
            expanded = expanded[1:]
        joined = expanded if os.path.isabs(expanded) else os.path.join(self.cwd, expanded)
        for base in [self.root, *(self.read_roots if for_read else [])]:
            if joined == base:
                return real, base, "."
            if joined.startswith(base.rstrip(os.sep) + os.sep):
                return real, base, joined[len(base.rstrip(os.sep)) + 1 :] or "."
        raise self._outside(raw, what)

    def open_fd(
        self,
        path: str | None,
        flags: int,
        mode: int = 0o666,
        *,
        what: str = "Path",
        for_read: bool = False,
        follow: bool = True,
    ) -> tuple[int, str]:
        """(descriptor, real path) of ``path`` opened beneath the workspace root."""
        real, base, rel = self.locate(path, what=what, for_read=for_read)
        try:
            root_fd = safefs.open_root(base)
        except safefs.EscapeError:
            raise self._outside(path or ".", what) from None
        try:
            fd = safefs.open_beneath_real(base, root_fd, rel, flags, mode, follow=follow)
            if self.owner is not None and flags & os.O_CREAT:
                os.fchown(fd, *self.owner)
            return fd, real
        except safefs.EscapeError:
            raise self._outside(path or ".", what) from None
        finally:
            os.close(root_fd)

    @contextlib.contextmanager
    def open(
        self, path: str | None, flags: int, mode: int = 0o666, **options: Any
    ) -> Iterator[tuple[int, str]]:
        """``open_fd`` (same arguments) as a context that closes the descriptor."""
        fd, real = self.open_fd(path, flags, mode, **options)
        try:
            yield fd, real
        finally:
            os.close(fd)

    def make_parents(self, path: str, *, what: str = "Path") -> None:
        """Create the missing parent directories of ``path``, each one beneath the root."""
        _real, base, rel = self.locate(path, what=what)
        parts = [p for p in rel.split("/")[:-1] if p not in ("", ".")]
        root_fd = safefs.open_root(base)
        try:
            for i in range(len(parts)):
                partial = "/".join(parts[: i + 1])
                try:
                    os.close(safefs.open_beneath(root_fd, partial, os.O_PATH | os.O_DIRECTORY))
                    continue
                except safefs.EscapeError:
                    raise self._outside(path, what) from None
                except FileNotFoundError:
                    pass
                parent = safefs.open_beneath(
                    root_fd, "/".join(parts[:i]) or ".", os.O_PATH | os.O_DIRECTORY
                )
                try:
                    os.mkdir(parts[i], dir_fd=parent)
                    if self.owner is not None:
                        os.chown(parts[i], *self.owner, dir_fd=parent, follow_symlinks=False)
                except FileExistsError:
                    pass
                finally:
                    os.close(parent)
        except safefs.EscapeError:
            raise self._outside(path, what) from None
        except NotADirectoryError:
            raise WorkspaceError(f"{what} {path}: a parent is not a directory.") from None
        finally:
            os.close(root_fd)

    def root_relative(self, real: str) -> str:
        """``real`` (a path inside the root) relative to the root, for opening beneath it."""
        if real == self.root:
            return "."
        return real[len(self.root.rstrip(os.sep)) + 1 :]

    def open_in_root(self, rel: str, flags: int, *, follow: bool) -> int:
        """Open ``rel`` (relative to the root, from a walk) beneath the root."""
        root_fd = safefs.open_root(self.root)
        try:
            return safefs.open_beneath_real(self.root, root_fd, rel, flags, follow=follow)
        except safefs.EscapeError:
            raise OSError(errno.EXDEV, "outside the workspace", rel) from None
        finally:
            os.close(root_fd)

    def relative(self, path: str) -> str:
        rel = os.path.relpath(path, self.cwd)
        return "." if rel == "." else rel
