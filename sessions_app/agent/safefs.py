"""Opening files under a directory so that nothing outside it can be reached.

Commands in the sandbox can create symlinks in the workspace and swap them at any
moment, so checking a path and then opening it is a race. Every open here is done by
the kernel relative to an open descriptor of the workspace root with ``openat2`` and
``RESOLVE_BENEATH``: a symlink (absolute or relative), or a ``..``, that would lead out
of the root fails with EXDEV at the moment of the open, wherever it sits in the path.
Symlinks that stay inside are followed, as pi does. Walks (grep, find, ls) go further
and follow no symlink at all for directories (``RESOLVE_NO_SYMLINKS``).

Kernels without openat2 (before 5.6) get a component-by-component walk with
``O_NOFOLLOW`` that refuses every symlink and every ``..``.

:class:`BeneathFiles` is the core's file source (``core/skills.FileSource``) for context
files and skills: it reads only beneath the roots it is given, the same way.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import stat
from collections.abc import Hashable, Iterable
from typing import BinaryIO

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
SYS_OPENAT2 = 437  # the same number on every Linux architecture


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_have_openat2: bool | None = None


class EscapeError(OSError):
    """The path leads outside the directory it was opened beneath."""


def _openat2(dirfd: int, path: str, flags: int, mode: int, resolve: int) -> int:
    if not flags & os.O_CREAT and flags & os.O_TMPFILE != os.O_TMPFILE:
        mode = 0  # openat2 refuses a mode without O_CREAT
    how = _OpenHow(flags | os.O_CLOEXEC, mode, resolve)
    fd: int = _libc.syscall(
        SYS_OPENAT2, dirfd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how)
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return fd


def _walk_nofollow(dirfd: int, path: str, flags: int, mode: int) -> int:
    """Fallback: open each component with O_NOFOLLOW; no symlink, no ``..``."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise EscapeError(errno.EXDEV, "path contains ..", path)
    current = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dirfd)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=current)
            os.close(current)
            current = nxt
            mode_bits = os.fstat(current).st_mode
            if stat.S_ISLNK(mode_bits):
                raise EscapeError(errno.ELOOP, "symlinks are not followed", path)
            if not stat.S_ISDIR(mode_bits):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
        if not parts:
            return os.open(".", flags | os.O_CLOEXEC, mode, dir_fd=current)
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=current)
    finally:
        os.close(current)


def open_beneath(
    dirfd: int, path: str, flags: int, mode: int = 0o666, *, follow: bool = True
) -> int:
    """A descriptor for ``path`` (relative) opened beneath ``dirfd``; EscapeError if the
    path leads outside. ``follow=False``: no symlink anywhere in the path."""
    global _have_openat2
    resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
    if not follow:
        resolve |= RESOLVE_NO_SYMLINKS
    path = path or "."
    if _have_openat2 is not False:
        try:
            fd = _openat2(dirfd, path, flags, mode, resolve)
            _have_openat2 = True
            return fd
        except OSError as exc:
            if exc.errno == errno.ENOSYS:
                _have_openat2 = False
            elif exc.errno == errno.EXDEV or (exc.errno == errno.ELOOP and not follow):
                raise EscapeError(exc.errno, "leads outside the workspace", path) from None
            else:
                raise
    try:
        return _walk_nofollow(dirfd, path, flags, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise EscapeError(exc.errno, "symlinks are not followed", path) from None
        raise


def open_beneath_real(
    root: str, root_fd: int, path: str, flags: int, mode: int = 0o666, *, follow: bool = True
) -> int:
    """Like :func:`open_beneath` (``root_fd`` is an open descriptor of the real path
    ``root``), but a symlink inside that is written as an absolute path (which
    RESOLVE_BENEATH always refuses) is followed too: its real path is computed, checked
    to lie under ``root``, and opened with no symlink allowed on the way, so a link
    swapped in after the check makes the open fail instead of escaping."""
    try:
        return open_beneath(root_fd, path, flags, mode, follow=follow)
    except EscapeError:
        if not follow:
            raise
    real = os.path.realpath(os.path.join(root, path))
    prefix = root.rstrip("/") + "/"
    if real != root and not real.startswith(prefix):
        raise EscapeError(errno.EXDEV, "leads outside the workspace", path)
    rel = "." if real == root else real[len(prefix) :]
    return open_beneath(root_fd, rel, flags, mode, follow=False)


def open_root(path: str) -> int:
    """An O_PATH descriptor of the directory ``path`` (a real path), checked to be it."""
    fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    if os.readlink(f"/proc/self/fd/{fd}") != path:
        os.close(fd)
        raise EscapeError(errno.EXDEV, "the directory moved while it was opened", path)
    return fd


def read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def names_in(dir_fd: int) -> list[str]:
    """The names in the directory open as ``dir_fd`` (a descriptor: no path is walked)."""
    return os.listdir(dir_fd)


def entries_in(dir_fd: int) -> list[tuple[str, bool, bool]]:
    """(name, is a directory, is a symlink) of each entry of the directory open as
    ``dir_fd``, sorted by name; neither test follows a link."""
    with os.scandir(dir_fd) as it:
        return sorted((e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in it)


def reader(fd: int) -> BinaryIO:
    """A binary file object over the open descriptor ``fd`` (closing it closes ``fd``)."""
    return open(fd, "rb")  # noqa: SIM115 (the caller closes it)


def is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def chown_tree(dir_fd: int, uid: int, gid: int) -> None:
    """Give the directory ``dir_fd`` (any descriptor of it, O_PATH included) and
    everything beneath it to ``uid:gid``, never following a symlink: each directory is
    entered through a descriptor opened with O_NOFOLLOW beneath its parent, so a path
    swapped for a link during the walk changes nothing outside."""
    top = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
    os.chown(top, uid, gid)
    pending = [top]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as entries:
                names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
            for name, is_dir in names:
                try:
                    os.chown(name, uid, gid, dir_fd=current, follow_symlinks=False)
                    if is_dir:
                        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                        pending.append(os.open(name, flags, dir_fd=current))
                except (FileNotFoundError, NotADirectoryError):
                    continue  # gone or replaced meanwhile: nothing of ours to hand over
        finally:
            os.close(current)


def _parts(rel: str) -> list[str]:
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise EscapeError(errno.EXDEV, "not a path beneath the folder", rel)
    return parts


def mkdir_beneath(root: str, rel: str, mode: int = 0o755) -> str:
    """Make the folder ``rel`` (relative) beneath the folder ``root``, and any missing
    folder on the way (those that exist are entered with no symlink followed: one that
    is a link fails with EscapeError). The last must be new (FileExistsError). Its path,
    joined to ``root`` as written."""
    parts = _parts(rel)
    fd = open_root(os.path.realpath(root))
    try:
        for i, part in enumerate(parts):
            try:
                os.mkdir(part, mode, dir_fd=fd)
            except FileExistsError:
                if i == len(parts) - 1:
                    raise
            inner = open_beneath(fd, part, os.O_PATH | os.O_DIRECTORY, follow=False)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    return os.path.join(root, *parts)


def remove_beneath(root: str, rel: str) -> bool:
    """Delete the folder ``rel`` (relative) beneath the folder ``root`` with all it holds,
    following no symlink: its parent is opened beneath ``root`` with none on the way, and
    the tree is removed through descriptors (``shutil.rmtree`` with ``dir_fd``), so a link
    swapped in anywhere deletes nothing outside. False when there is no such folder (a
    file or a link there is left alone)."""
    parts = _parts(rel)
    root_fd = open_root(os.path.realpath(root))
    try:
        parent = "/".join(parts[:-1]) or "."
        try:
            parent_fd = open_beneath(root_fd, parent, os.O_RDONLY | os.O_DIRECTORY, follow=False)
        except (FileNotFoundError, NotADirectoryError):
            return False
    finally:
        os.close(root_fd)
    try:
        try:
            st = os.stat(parts[-1], dir_fd=parent_fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            return False
        shutil.rmtree(parts[-1], dir_fd=parent_fd)
        return True
    finally:
        os.close(parent_fd)


class BeneathFiles:
    """The core's file source (``core/skills.FileSource``: ``kind``, ``read``,
    ``list_dir``, ``identity``) that reaches nothing outside ``roots`` (real paths of
    directories).

    A path is opened beneath the longest root it lies in, with :func:`open_beneath_real`:
    a link that stays inside is followed, one leading out is reported as ``"outside"``
    and never opened. A path in no root is "not there". Only regular files are read
    (opened non-blocking, so a FIFO cannot hang the reader), and at most ``max_bytes``
    of them.
    """

    def __init__(self, roots: Iterable[str], max_bytes: int = 16 << 20):
        self.roots = sorted({os.path.abspath(r) for r in roots}, key=len, reverse=True)
        self.max_bytes = max_bytes

    def _locate(self, path: str) -> tuple[str, str] | None:
        path = os.path.abspath(path)
        for root in self.roots:
            if path == root:
                return root, "."
            prefix = root if root.endswith("/") else root + "/"
            if path.startswith(prefix):
                return root, path[len(prefix) :]
        return None

    def _open(self, path: str, flags: int) -> int:
        located = self._locate(path)
        if located is None:
            raise PermissionError(errno.EACCES, "outside the folders this session may read", path)
        root, rel = located
        root_fd = open_root(root)
        try:
            return open_beneath_real(root, root_fd, rel, flags)
        finally:
            os.close(root_fd)

    def kind(self, path: str) -> str | None:
        if self._locate(path) is None:
            return None
        try:
            fd = self._open(path, os.O_PATH)
        except EscapeError:
            return "outside"
        except FileNotFoundError:
            return "broken_link" if self._is_link(path) else None
        except NotADirectoryError:
            return None
        except OSError:
            return "other"
        try:
            mode = os.fstat(fd).st_mode
        finally:
            os.close(fd)
        if stat.S_ISDIR(mode):
            return "dir"
        if stat.S_ISREG(mode):
            return "file"
        return "outside" if stat.S_ISLNK(mode) else "other"

    def _is_link(self, path: str) -> bool:
        try:
            fd = self._open(path, os.O_PATH | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            return stat.S_ISLNK(os.fstat(fd).st_mode)
        finally:
            os.close(fd)

    def read(self, path: str) -> bytes:
        fd = self._open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", path)
            chunks, total = [], 0
            while chunk := os.read(fd, min(1 << 20, self.max_bytes + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
                if total > self.max_bytes:
                    raise OSError(errno.EFBIG, f"larger than {self.max_bytes:,} bytes", path)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def list_dir(self, path: str) -> list[str]:
        fd = self._open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            return os.listdir(fd)
        finally:
            os.close(fd)

    def identity(self, path: str) -> Hashable:
        fd = self._open(path, os.O_PATH)
        try:
            st = os.fstat(fd)
            return (st.st_dev, st.st_ino)
        finally:
            os.close(fd)
