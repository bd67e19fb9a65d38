"""Fingerprints of a growing pi session file, for the follower (no database here).

pi appends whole lines to a session file and, when it migrates one, rewrites it. The
follower remembers how far it has read (`offset`, the end of the last complete line) and
two hashes: the first block of the file and the block that ends at `offset`. If both
still match and the file is not shorter than `offset`, whatever lies past `offset` is an
append; otherwise the file was rewritten (or replaced) and is read again from the start.
"""

from __future__ import annotations

import hashlib
import io
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

BLOCK = 8192
_BACK_STEP = 1 << 16


class Marks(NamedTuple):
    head_hash: str
    tail_hash: str


def _hash_range(fh: BinaryIO, start: int, end: int) -> str:
    fh.seek(start)
    data = fh.read(end - start) if end > start else b""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def marks_at(fh: BinaryIO, offset: int) -> Marks:
    """The hashes of the first block and of the block ending at `offset`."""
    return Marks(
        _hash_range(fh, 0, min(offset, BLOCK)),
        _hash_range(fh, max(0, offset - BLOCK), offset),
    )


def complete_length(fh: BinaryIO, start: int, end: int) -> int:
    """The end of the last complete line (just past its newline) in bytes [start, end);
    `start` when no newline is there yet (a line still being written)."""
    position = end
    while position > start:
        step_start = max(start, position - _BACK_STEP)
        fh.seek(step_start)
        data = fh.read(position - step_start)
        newline = data.rfind(b"\n")
        if newline >= 0:
            return step_start + newline + 1
        position = step_start
    return start


class RangeReader(io.RawIOBase):
    """Bytes [start, end) of a file, as a readable, seekable file of its own. `newlines`
    counts the newlines of the bytes read so far, each byte once however often it is
    read again after a rewind (the lines the range holds, once it was read to the end)."""

    def __init__(self, fh: BinaryIO, start: int, end: int):
        self.fh, self.start, self.end = fh, start, end
        self.position = start
        self.furthest = start
        self.newlines = 0
        self.name = getattr(fh, "name", "")

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position - self.start

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence != 0:
            raise io.UnsupportedOperation("only absolute seeks")
        self.position = self.start + max(0, min(offset, self.end - self.start))
        return self.tell()

    def read(self, size: int = -1) -> bytes:
        left = self.end - self.position
        if size is None or size < 0 or size > left:
            size = left
        if size <= 0:
            return b""
        self.fh.seek(self.position)
        data = self.fh.read(size)
        new_from = self.furthest - self.position
        self.position += len(data)
        if self.position > self.furthest:
            self.newlines += data.count(b"\n", max(0, new_from))
            self.furthest = self.position
        return data

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(view.nbytes)
        view[: len(data)] = data
        return len(data)
