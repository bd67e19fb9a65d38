"""Unpack an uploaded .tar.gz or .zip into a new, empty folder, refusing anything hostile.

The whole archive is checked before a single file is written, and refused (ArchiveError,
with what is wrong) when any member:

- has an absolute name, a ``..`` component, a NUL or a drive letter;
- is a device, a FIFO or a socket;
- has the setuid, setgid or sticky bit;
- is a hard link (a tar hard link is refused unless it names an earlier regular member
  of the archive, and is then written as a copy), or a symbolic link whose target is
  absolute or leads outside the folder, followed through the archive's other links
  (``s2 -> .``, ``s1 -> s2/..`` leads out; links are created last, so no file is ever
  written through one);
- or when the members add up to more than ``max_bytes`` unpacked or ``max_files``
  entries (a zip bomb), and while writing, a member that inflates past its declared
  size is cut off and the archive refused.

A tar is read by ``tarfile``, which holds a whole extended header (PAX, GNU long name)
in memory: a 300 KB .tgz whose PAX header declares a 300 MB field took the web process
to 1.45 GB. So the tar stream's 512-byte headers are scanned first, here, in constant
memory (``_scan_tar_headers``), and an extended header over ``MAX_EXTENDED_HEADER``, a
run of them, a sparse member or a PAX ``size`` record is refused before ``tarfile``
reads anything.

Files are created with ``O_NOFOLLOW | O_EXCL`` under directories made here, with their
permission bits kept within 0o755 (owner read/write always added).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import posixpath
import re
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import IO, BinaryIO, Protocol

from . import safefs

CHUNK = 1 << 16
BLOCK = tarfile.BLOCKSIZE
MAX_EXTENDED_HEADER = 64 << 10  # a PAX or GNU long-name header: a few names and attributes
MAX_HEADERS_IN_A_ROW = 8  # extended headers before the member they describe
MAX_LINK_HOPS = 40  # links followed to resolve one path (the kernel's own limit)
_EXTENDED = {b"x": "PAX", b"g": "PAX global", b"X": "PAX", b"L": "GNU long name"}
_EXTENDED[b"K"] = "GNU long link name"
_SPARSE_OR_SIZE = re.compile(rb"\d+ (GNU\.sparse\.[^=]*|size)=")


class ArchiveError(ValueError):
    """An archive that is refused (nothing of it is left on disk)."""


@dataclass
class _Member:
    name: str  # normalized, relative, "/"-separated
    kind: str  # file | dir | symlink | hardlink
    size: int = 0
    mode: int = 0o644
    target: str = ""  # symlink target, or the hard link's member name
    source: tarfile.TarInfo | zipfile.ZipInfo | None = None


@dataclass
class Unpacked:
    files: int = 0
    bytes: int = 0
    skipped: list[str] = field(default_factory=list)


def _clean_name(raw: str) -> str:
    if "\x00" in raw:
        raise ArchiveError(f"{raw!r}: a name with a NUL byte")
    name = raw.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveError(f"{raw}: an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ArchiveError(f"{raw}: a path with '..'")
    return "/".join(parts)


def _check_mode(raw: str, mode: int) -> int:
    if mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX):
        raise ArchiveError(f"{raw}: setuid, setgid or sticky bits")
    return (mode & 0o755) | 0o600


def _check_link(name: str, target: str) -> str:
    if not target or "\x00" in target:
        raise ArchiveError(f"{name}: a link without a usable target")
    if target.startswith("/") or target.startswith("\\"):
        raise ArchiveError(f"{name}: a link to an absolute path ({target})")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    if resolved == ".." or resolved.startswith("../") or resolved.startswith("/"):
        raise ArchiveError(f"{name}: a link that leads outside ({target})")
    return target


def _resolve_in_archive(name: str, target: str, links: dict[str, str]) -> None:
    """Follow `target` (of the link `name`) through the archive's own links, as the
    kernel would once they are on disk; ArchiveError when it leads above the folder."""
    stack = name.split("/")[:-1]
    pending = target.split("/")
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not stack:
                raise ArchiveError(f"{name}: a link that leads outside through other links")
            stack.pop()
            continue
        stack.append(part)
        inner = links.get("/".join(stack))
        if inner is None:
            continue
        hops += 1
        if hops > MAX_LINK_HOPS or inner.startswith("/"):
            raise ArchiveError(f"{name}: a chain of links that cannot be followed")
        stack.pop()
        pending = inner.split("/") + pending


# A tar's bytes, decompressed as they are read.
_Stream = gzip.GzipFile | bz2.BZ2File | lzma.LZMAFile | BinaryIO


def _open_decompressed(path: str) -> _Stream:
    with open(path, "rb") as raw:
        magic = raw.read(6)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(path, "rb")
    if magic[:3] == b"BZh":
        return bz2.open(path, "rb")
    if magic == b"\xfd7zXZ\x00":
        return lzma.open(path, "rb")
    return open(path, "rb")


def _skip(stream: _Stream, count: int) -> None:
    while count > 0:
        chunk = stream.read(min(count, 1 << 20))
        if not chunk:
            return
        count -= len(chunk)


def _tar_header(stream: _Stream, offset: int) -> tuple[bytes, int] | None:
    """(type, size) of the header block at the stream's position; None at the end."""
    block = stream.read(BLOCK)
    if len(block) < BLOCK or block.count(0) == BLOCK:
        return None
    try:
        valid = _header_number(block[148:156]) in _header_checksums(block)
        size = _header_number(block[124:136])
    except ValueError:
        valid = False
    if not valid or size < 0:
        if offset == 0:
            raise ArchiveError("not a .tar.gz or .zip archive (no tar header at its start)")
        raise ArchiveError(f"a damaged tar header at byte {offset:,}")
    return block[156:157], size


def _header_number(field: bytes) -> int:
    """A number field of a tar header: octal text up to its NUL, or GNU's base-256 form
    (first byte 0x80, or 0xff for a negative number); ValueError for anything else."""
    if field[:1] in (b"\x80", b"\xff"):
        value = int.from_bytes(field[1:], "big")
        return value - 256 ** (len(field) - 1) if field[:1] == b"\xff" else value
    text = field.split(b"\0", 1)[0].decode("ascii").strip()
    return int(text or "0", 8)


def _header_checksums(block: bytes) -> tuple[int, int]:
    """The header's checksum as tar computes it, over unsigned then signed bytes, with
    the checksum field itself read as eight spaces (either form is accepted)."""
    rest = block[:148] + block[156:512]
    unsigned = 8 * 32 + sum(rest)
    signed = 8 * 32 + sum(b - 256 if b > 127 else b for b in rest)
    return unsigned, signed


def _scan_tar_headers(path: str) -> None:
    """Read every header block of the tar at `path`, in constant memory, and refuse what
    would make ``tarfile`` hold too much: an extended header over MAX_EXTENDED_HEADER, a
    run of over MAX_HEADERS_IN_A_ROW of them, sparse members (their maps are unbounded),
    a PAX size record (the scan could no longer follow the stream)."""
    with _open_decompressed(path) as stream:
        offset, in_a_row = 0, 0
        while (header := _tar_header(stream, offset)) is not None:
            kind, size = header
            blocks = -(-size // BLOCK) * BLOCK
            offset += BLOCK
            if kind == b"S":
                raise ArchiveError(f"a sparse member at byte {offset:,}: not accepted")
            if kind in _EXTENDED:
                if size > MAX_EXTENDED_HEADER:
                    raise ArchiveError(
                        f"a {_EXTENDED[kind]} header of {size:,} bytes at byte {offset:,}: "
                        f"at most {MAX_EXTENDED_HEADER:,} are read"
                    )
                in_a_row += 1
                if in_a_row > MAX_HEADERS_IN_A_ROW:
                    raise ArchiveError(
                        f"more than {MAX_HEADERS_IN_A_ROW} extended headers in a row"
                    )
                content = stream.read(blocks)
                if kind not in (b"L", b"K") and _SPARSE_OR_SIZE.search(content):
                    raise ArchiveError(
                        f"a PAX header with sparse or size records at byte {offset:,}"
                    )
                offset += blocks
                continue
            in_a_row = 0
            if kind in tarfile.REGULAR_TYPES or kind not in tarfile.SUPPORTED_TYPES:
                _skip(stream, blocks)
                offset += blocks


def _tar_members(tar: tarfile.TarFile, max_bytes: int, max_files: int) -> list[_Member]:
    members: list[_Member] = []
    regular: set[str] = set()
    total = 0
    for info in tar:
        # Checked as the headers come, before the reader skips a huge member's data.
        total += info.size if info.isfile() else 0
        if total > max_bytes or len(members) >= max_files:
            _check_totals([*members, _Member("(more)", "file", size=total)], max_bytes, max_files)
        name = _clean_name(info.name)
        if not name:
            continue
        if (
            info.isdev()
            or info.isfifo()
            or not (info.isfile() or info.isdir() or info.issym() or info.islnk())
        ):
            raise ArchiveError(f"{info.name}: a device, FIFO or other special file")
        mode = _check_mode(info.name, info.mode)
        if info.isdir():
            members.append(_Member(name, "dir", mode=mode, source=info))
        elif info.issym():
            members.append(_Member(name, "symlink", target=_check_link(name, info.linkname)))
        elif info.islnk():
            target = _clean_name(info.linkname)
            if target not in regular:
                raise ArchiveError(f"{info.name}: a hard link to {info.linkname}, not a file in it")
            members.append(_Member(name, "hardlink", target=target))
        else:
            regular.add(name)
            members.append(_Member(name, "file", size=info.size, mode=mode, source=info))
    return members


def _zip_members(archive: zipfile.ZipFile) -> list[_Member]:
    members: list[_Member] = []
    for info in archive.infolist():
        name = _clean_name(info.filename)
        if not name:
            continue
        unix = info.external_attr >> 16
        kind = stat.S_IFMT(unix) if unix else 0
        if kind and kind not in (stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK):
            raise ArchiveError(f"{info.filename}: a device, FIFO or other special file")
        mode = _check_mode(info.filename, stat.S_IMODE(unix) if unix else 0o644)
        if info.is_dir() or kind == stat.S_IFDIR:
            members.append(_Member(name, "dir", mode=mode | 0o700, source=info))
        elif kind == stat.S_IFLNK:
            if info.file_size > 4096:
                raise ArchiveError(f"{info.filename}: a link target that is too long")
            target = archive.read(info).decode("utf-8", "replace")
            members.append(_Member(name, "symlink", target=_check_link(name, target)))
        else:
            members.append(_Member(name, "file", size=info.file_size, mode=mode, source=info))
    return members


def _check_totals(members: list[_Member], max_bytes: int, max_files: int) -> None:
    if len(members) > max_files:
        raise ArchiveError(f"more than {max_files:,} entries")
    total = sum(m.size for m in members if m.kind == "file")
    total += sum(
        next((f.size for f in members if f.kind == "file" and f.name == m.target), 0)
        for m in members
        if m.kind == "hardlink"
    )
    if total > max_bytes:
        raise ArchiveError(
            f"it unpacks to {total:,} bytes, more than the {max_bytes:,} allowed (a zip bomb?)"
        )
    names = set()
    for m in members:
        if m.name in names and m.kind != "dir":
            raise ArchiveError(f"{m.name}: twice in the archive")
        names.add(m.name)
    links = {m.name: m.target for m in members if m.kind == "symlink"}
    for name, target in links.items():
        _resolve_in_archive(name, target, links)
    for m in members:
        parts = m.name.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in links:
                raise ArchiveError(f"{m.name}: inside a symbolic link of the archive")


def _makedirs(dest_fd: int, relative: str) -> int:
    """A descriptor of the directory `relative` under dest_fd, made as needed, never
    through a symbolic link."""
    fd = os.dup(dest_fd)
    for part in [p for p in relative.split("/") if p]:
        try:
            os.mkdir(part, 0o755, dir_fd=fd)
        except FileExistsError:
            pass
        try:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        finally:
            os.close(fd)
        fd = next_fd
    return fd


class _Reader(Protocol):
    """A member's bytes as they are read (a zip's or a tar's member, a file)."""

    def read(self, size: int = -1, /) -> bytes: ...


# Opens a file member of the archive for reading.
_Opener = Callable[[_Member], AbstractContextManager[_Reader]]


def _write_file(dest_fd: int, member: _Member, stream: _Reader, budget: list[int]) -> int:
    parent, _, base = member.name.rpartition("/")
    dir_fd = _makedirs(dest_fd, parent)
    try:
        fd = os.open(
            base,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
            member.mode,
            dir_fd=dir_fd,
        )
    finally:
        os.close(dir_fd)
    written = 0
    try:
        while True:
            chunk = stream.read(CHUNK)
            if not chunk:
                break
            written += len(chunk)
            budget[0] -= len(chunk)
            if written > member.size or budget[0] < 0:
                raise ArchiveError(f"{member.name}: inflates past its declared size (a zip bomb?)")
            os.write(fd, chunk)
        os.fchmod(fd, member.mode)
    finally:
        os.close(fd)
    return written


def _unpack(members: list[_Member], open_member: _Opener, max_bytes: int, dest_fd: int) -> Unpacked:
    done = Unpacked()
    budget = [max_bytes]
    for m in members:
        if m.kind == "dir":
            os.close(_makedirs(dest_fd, m.name))
        elif m.kind == "file":
            with open_member(m) as stream:
                done.bytes += _write_file(dest_fd, m, stream, budget)
            done.files += 1
    for m in members:
        if m.kind == "hardlink":  # a copy of the member it names (written above)
            source = next(f for f in members if f.kind == "file" and f.name == m.target)
            fd = safefs.open_beneath(dest_fd, m.target, os.O_RDONLY | os.O_NONBLOCK, follow=False)
            with os.fdopen(fd, "rb") as stream:
                copy = _Member(m.name, "file", size=source.size, mode=source.mode)
                done.bytes += _write_file(dest_fd, copy, stream, budget)
            done.files += 1
    for m in members:
        if m.kind == "symlink":
            parent, _, base = m.name.rpartition("/")
            dir_fd = _makedirs(dest_fd, parent)
            try:
                os.symlink(m.target, base, dir_fd=dir_fd)
            finally:
                os.close(dir_fd)
    return done


def unpack(path: str, dest: str, *, max_bytes: int, max_files: int) -> Unpacked:
    """Unpack the archive at `path` (.tar.gz/.tgz/.tar or .zip, told by its content) into
    `dest`, which must exist and be empty. On ArchiveError `dest` is emptied again."""
    if os.listdir(dest):
        raise ArchiveError("the new workspace folder is not empty")
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                members = _zip_members(archive)
                _check_totals(members, max_bytes, max_files)
                return _run(members, _zip_opener(archive), dest, max_bytes)
        try:
            _scan_tar_headers(path)
            with tarfile.open(path, "r:*") as tar:
                members = _tar_members(tar, max_bytes, max_files)
            _check_totals(members, max_bytes, max_files)
            with tarfile.open(path, "r:*") as tar:
                by_name = {_clean_name(i.name): i for i in tar.getmembers() if i.isfile()}
                return _run(members, _tar_opener(tar, by_name), dest, max_bytes)
        except tarfile.TarError as exc:
            raise ArchiveError(f"not a .tar.gz or .zip archive ({exc})") from None
    except (ArchiveError, OSError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError) as exc:
        _empty(dest)
        if isinstance(exc, ArchiveError):
            raise
        raise ArchiveError(f"the archive cannot be read: {exc}") from None


def _zip_opener(archive: zipfile.ZipFile) -> _Opener:
    def open_member(member: _Member) -> IO[bytes]:
        if not isinstance(member.source, zipfile.ZipInfo):  # (_zip_members sets it)
            raise ArchiveError(f"{member.name}: not a member of the zip")
        return archive.open(member.source)

    return open_member


def _tar_opener(tar: tarfile.TarFile, by_name: dict[str, tarfile.TarInfo]) -> _Opener:
    def open_member(member: _Member) -> IO[bytes]:
        stream = tar.extractfile(by_name[member.name])
        if stream is None:  # (by_name holds regular files only: each has its bytes)
            raise ArchiveError(f"{member.name}: not a regular file")
        return stream

    return open_member


def _run(members: list[_Member], open_member: _Opener, dest: str, max_bytes: int) -> Unpacked:
    dest_fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        return _unpack(members, open_member, max_bytes, dest_fd)
    finally:
        os.close(dest_fd)


def _empty(dest: str) -> None:
    for item in os.scandir(dest):
        if item.is_dir(follow_symlinks=False):
            shutil.rmtree(item.path, ignore_errors=True)
        else:
            try:
                os.unlink(item.path)
            except OSError:
                pass
