"""Session files read and prepared for import, here or a few chunks ahead in helper processes.

Importing a new file is two kinds of work: preparing its lines (reading the bytes,
parsing the JSON, the columns, the usage: `import_lines.LinePreparer`) and writing the
rows, besides the database server's own work. The follower's first scan imports many new
files in one transaction; with `ReadAhead`, helper processes prepare the next files while
the follower writes, on the cores the follower and the server leave.

`prepare_file(path, size)` is the one reading of a file, wherever it runs: the records of
its complete lines, a chunk at a time, then its `FileDigest` (where the import ends, its
hash, its lines and fingerprints). What a helper prepares is exactly what `prepare_file`
gives here. A helper gets paths and sizes and sends records back, in the order asked,
never more than `AHEAD` chunks ahead (memory stays bounded). A helper that fails or dies
makes the run fail with a clear error (the caller then imports the files one by one); a
helper whose follower dies exits by itself.

Pure: no Django (a helper imports only the core).
"""

from __future__ import annotations

import fcntl
import gc
import hashlib
import io
import os
import queue
import struct
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol

import msgspec

from .file_marks import Marks, RangeReader, complete_length, marks_at
from .import_lines import (
    MAX_LINE_BYTES,
    LinePreparer,
    PreparedEntry,
    RawObject,
    Record,
    Skip,
    Warn,
)

CHUNK = 1 << 20  # bytes prepared and sent at a time
# A helper runs at a lower priority: the follower and the database server, which write
# what it prepared, come first, and the helper uses the time they leave (about a tenth
# faster on two cores than at the same priority; a web server beside it stays quick).
HELPER_NICENESS = 10
AHEAD = 8  # chunks a helper may prepare before the follower takes them


class FileDigest(NamedTuple):
    """What is known of a file once its records are read: the import covers [0, end)."""

    end: int  # the end of the last complete line
    sha256: str  # of bytes [0, end)
    lines: int  # newlines in [0, end)
    marks: Marks  # file_marks.marks_at(end)


# What `prepare_file` gives: the records of each chunk, then the file's digest.
Prepared = list[Record] | FileDigest


class ReadAheadError(RuntimeError):
    """The helper could not prepare a file (the message says why), or stopped."""


def prepare_file(path: str, size: int, chunk_size: int = CHUNK) -> Iterator[Prepared]:
    """The records of the complete lines among the first `size` bytes of `path`, one list
    per chunk read, then the file's `FileDigest`. A line still being written (no newline
    yet) is left out; raises OSError when the file cannot be read."""
    with open(path, "rb") as fh:
        end = complete_length(fh, 0, size)
        reader = RangeReader(fh, 0, end)  # (it counts the newlines)
        hasher = hashlib.sha256()
        preparer = LinePreparer(MAX_LINE_BYTES)
        while data := reader.read(chunk_size):
            hasher.update(data)
            yield preparer.feed(data)
        if reader.furthest != end:
            raise OSError(f"{path} became shorter while it was read")
        yield preparer.end()
        yield FileDigest(end, hasher.hexdigest(), reader.newlines, marks_at(fh, end))


# --- the helper process ----------------------------------------------------------------
#
# A helper is `python -m sessions_app.core.read_ahead`, fed runs on its stdin and
# answering on its stdout, in frames: a kind byte, the payload's length (4 bytes) and the
# payload, msgpack (msgspec: several times cheaper than pickle for these records). For
# each file of a run, in order: one "C" frame per chunk, then "D" (its digest) or "X"
# (why it could not be read). A helper ends at the end of its stdin, so it ends with the
# follower however the follower ends.


class _WireChunk(NamedTuple):
    entries: list[PreparedEntry]
    others: list[tuple[Any, ...]]  # (position in the chunk, kind, fields...) of the other records


_OTHER_KINDS = (Skip, Warn, RawObject)
_HEADER = struct.Struct("<cI")
_ENCODER = msgspec.msgpack.Encoder()
_CHUNK_DECODER = msgspec.msgpack.Decoder(_WireChunk)
_DIGEST_DECODER = msgspec.msgpack.Decoder(tuple[int, str, int, str, str])
_RUN_DECODER = msgspec.msgpack.Decoder(list[tuple[str, int]])


def _pack(records: list[Record]) -> bytes:
    entries: list[PreparedEntry] = []
    others: list[tuple[Any, ...]] = []
    for position, record in enumerate(records):
        if type(record) is PreparedEntry:
            entries.append(record)
        else:
            others.append((position, _OTHER_KINDS.index(type(record)), *record))
    return _ENCODER.encode((entries, others))


def _unpack(payload: bytes | bytearray) -> list[Record]:
    chunk = _CHUNK_DECODER.decode(payload)
    records: list[Record] = list(chunk.entries)  # the prepared entries, then the others in place
    for position, kind, *fields in chunk.others:  # (in order: each lands where it was)
        records.insert(position, _OTHER_KINDS[kind](*fields))
    return records


class _ByteSource(Protocol):
    """A binary stream that reads into a buffer (a pipe, a file)."""

    def readinto(self, buffer: memoryview, /) -> int | None: ...


def _write_frame(out: IO[bytes], kind: bytes, payload: bytes) -> None:
    for data in (_HEADER.pack(kind, len(payload)), payload):
        view = memoryview(data)
        while view:  # (an unbuffered pipe may take part of it)
            view = view[out.write(view) :]


def _read_frame(source: _ByteSource) -> tuple[bytes, bytearray] | None:
    """The next frame, or None at the end of the stream (the other side is gone)."""
    header = _read_exactly(source, _HEADER.size)
    if header is None:
        return None
    kind, size = _HEADER.unpack(header)
    payload = _read_exactly(source, size)
    return None if payload is None else (kind, payload)


def _read_exactly(source: _ByteSource, size: int) -> bytearray | None:
    """`size` bytes from a stream that may return fewer per read (a pipe), read straight
    into one buffer; None when the stream ends first."""
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        count = source.readinto(view[got:])
        if not count:
            return None
        got += count
    return buffer


def _frames_of(path: str, size: int) -> Iterator[tuple[bytes, bytes]]:
    try:
        for item in prepare_file(path, size):
            if isinstance(item, FileDigest):
                yield b"D", _ENCODER.encode((item.end, item.sha256, item.lines, *item.marks))
            else:
                yield b"C", _pack(item)
    except Exception as exc:  # (reported: the follower then imports these files alone)
        yield b"X", f"{path}: {exc}".encode("utf-8", "replace")


def serve(requests: _ByteSource, answers: IO[bytes]) -> None:
    """The helper's loop (see above): `requests` and `answers` are binary streams. A
    writer thread sends the frames, so preparing runs up to AHEAD chunks ahead of the
    reader."""
    frames: queue.Queue[tuple[bytes, bytes] | None] = queue.Queue(maxsize=AHEAD)

    def send_frames() -> None:
        try:
            while (frame := frames.get()) is not None:
                _write_frame(answers, *frame)
                if frames.empty():
                    answers.flush()
        except (BrokenPipeError, ValueError):
            os._exit(0)  # the follower is gone: nothing left to do

    writer = threading.Thread(target=send_frames, name="read-ahead-writer", daemon=True)
    writer.start()
    os.nice(HELPER_NICENESS)
    # Parsing allocates a container per JSON object and makes no cycles: the cycle
    # collector's passes would cost a good part of the time, for nothing (after a run,
    # one pass collects whatever else there is).
    gc.disable()
    while (request := _read_frame(requests)) is not None:
        for path, size in _RUN_DECODER.decode(request[1]):
            for frame in _frames_of(path, size):
                frames.put(frame)
        gc.collect()
    frames.put(None)
    writer.join()


class _Helper:
    """One helper process and its pipes."""

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parents[2])
        path = os.environ.get("PYTHONPATH")
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,  # (frames are read whole into one buffer, written whole)
            env={**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")},
        )
        assert self.process.stdin is not None and self.process.stdout is not None  # (PIPE)
        assert isinstance(self.process.stdout, io.FileIO)  # (unbuffered: bufsize=0)
        self.stdin: IO[bytes] = self.process.stdin
        self.stdout: io.FileIO = self.process.stdout
        try:  # a pipe as big as a chunk: a frame in one or two reads, not twenty
            fcntl.fcntl(self.stdout.fileno(), fcntl.F_SETPIPE_SZ, CHUNK)
        except (AttributeError, OSError):  # (not Linux, or above the system's limit)
            pass

    def ask(self, run: list[tuple[str, int]]) -> None:
        _write_frame(self.stdin, b"R", _ENCODER.encode(run))

    def receive(self) -> tuple[bytes, bytearray]:
        frame = _read_frame(self.stdout)
        if frame is None:
            code = self.process.wait()
            raise ReadAheadError(f"the read-ahead helper stopped (exit code {code})")
        return frame

    def stop(self) -> None:
        self.stdin.close()  # (it ends at the end of its input)
        self.process.kill()  # (what it was still preparing is of no use)
        self.process.wait()
        self.stdout.close()


class ReadAhead:
    """`processes` helper processes that prepare files for the caller, started on first
    use; use it as a context manager (they end with it). `files(run)` gives, for each
    (path, size) of the run in order, an iterator like `prepare_file`'s; the files are
    dealt to the helpers in turn. A run must be read to its end before the next starts;
    after an error the helpers are stopped (what they prepared for the rest of that run is
    of no use) and the next run starts others."""

    def __init__(self, processes: int = 1) -> None:
        self.processes = max(1, processes)
        self._helpers: list[_Helper] = []
        self._run_open = False  # a run was started and not read to its end

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def files(self, run: list[tuple[str, int]]) -> Iterator[Iterator[Prepared]]:
        if self._run_open:  # the last run was left half read: its chunks are still coming
            self.close()
        if not self._helpers:
            self._helpers = [_Helper() for _ in range(self.processes)]
        helpers = self._helpers[: len(run)]
        try:
            for number, helper in enumerate(helpers):
                helper.ask(list(run[number :: len(helpers)]))
        except OSError as exc:  # (a helper that died between two runs)
            self.close()
            raise ReadAheadError(f"the read-ahead helper stopped ({exc})") from exc
        self._run_open = True
        for index in range(len(run)):
            yield self._one_file(helpers[index % len(helpers)])
        self._run_open = False

    def _one_file(self, helper: _Helper) -> Iterator[Prepared]:
        while True:
            try:
                kind, payload = helper.receive()
            except ReadAheadError:
                self.close()
                raise
            if kind == b"C":
                yield _unpack(payload)
            elif kind == b"D":
                end, sha256, lines, head, tail = _DIGEST_DECODER.decode(payload)
                yield FileDigest(end, sha256, lines, Marks(head, tail))
                return
            else:
                self.close()
                raise ReadAheadError(payload.decode("utf-8", "replace"))

    def close(self) -> None:
        """Stop the helpers (if any run); the next run starts others."""
        helpers, self._helpers = self._helpers, []
        self._run_open = False
        for helper in helpers:
            helper.stop()


def prepared_files(
    run: list[tuple[str, int]], helper: ReadAhead | None
) -> Iterable[Iterator[Prepared]]:
    """For each (path, size) of `run`, its `prepare_file` iterator: read by `helper` when
    there is one, else here, as it is consumed."""
    if helper is not None:
        return helper.files(run)
    return (prepare_file(path, size) for path, size in run)


if __name__ == "__main__":
    requests = sys.stdin.buffer
    assert isinstance(requests, io.BufferedReader)  # (a process's stdin, as Python opens it)
    serve(requests, sys.stdout.buffer)
