"""daphne, with request bodies bounded and handed to Django at the pace it reads them.

`python -m piweb.server [daphne's arguments]` is daphne's own command line with one
change, the request class of its HTTP factory (``BoundedWebRequest``):

- a body larger than ``PIWEB_MAX_UPLOAD_BYTES`` (plus room for the multipart envelope) is
  refused with 413 as soon as its Content-Length says so, or, for a chunked body, as soon
  as the bytes received pass the limit; the connection is closed without reading the rest;
- twisted parses a multipart body into ``request.args`` (daphne never uses them) by
  reading all of it into memory, several copies: that parse is off;
- daphne keeps a body it has received in a temporary file (twisted's), then queues all of
  it for the application at once: a 500 MB upload was 500 MB of bytes objects in the
  queue. Here the queue gets a small record of each chunk instead (where it is in that
  file), and a feeder reads the bytes only when the application has taken the chunks
  before, so the web process holds a few chunks of a body at any time. The chunks are
  256 KiB (daphne's are 8 KiB: 32 times the messages, the most of a large request's
  time on loopback).

runpiweb and the test suite start daphne this way. The patch below replaces the request
class daphne's factory builds (a module global of ``daphne.http_protocol``); nothing else
of daphne changes.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os

import django
from daphne import http_protocol

log = logging.getLogger(__name__)

ENVELOPE_BYTES = 1024 * 1024  # the multipart boundaries, headers and other form fields
QUEUED_CHUNKS = 4  # chunks of a body waiting in the application's queue at most
# The size of a body chunk handed to the application. daphne asks for 8 KiB ones
# (`request_buffer_size`, which its command line does not set): an 8 MiB sync batch was
# 1024 messages through the queue, each paced by the feeder, about 300 ms of the request
# on loopback. At 256 KiB (Django's FILE_UPLOAD_MAX_MEMORY_SIZE here) it is 32 messages,
# about 25 ms, and the process still holds at most QUEUED_CHUNKS of them (1 MiB).
CHUNK_BYTES = 256 * 1024


def max_body_bytes() -> int:
    from django.conf import settings

    return int(settings.PIWEB_MAX_UPLOAD_BYTES) + ENVELOPE_BYTES


class _Slice:
    """Where one chunk of a received body is in twisted's content file (not its bytes)."""

    __slots__ = ("offset", "length")

    def __init__(self, offset: int, length: int):
        self.offset, self.length = offset, length

    def __len__(self) -> int:
        return self.length


class _SliceReader:
    """Stands in for the content file while daphne splits the body into messages: each
    read returns a `_Slice`; the bytes stay in the file until the feeder reads them."""

    def __init__(self, content):
        self.content = content
        content.seek(0, os.SEEK_END)
        self.size = content.tell()
        self.position = 0

    @property
    def closed(self) -> bool:
        return self.content.closed

    def seek(self, offset: int, whence: int = 0) -> int:
        self.position = offset if whence == os.SEEK_SET else self.position + offset
        return self.position

    def close(self) -> None:
        self.content.close()

    def read(self, size: int = -1) -> _Slice:
        """The next slice, CHUNK_BYTES long when daphne asks for less (daphne sees the
        body's end at the first slice shorter than it asked for, or an empty one)."""
        left = self.size - self.position
        length = left if size is None or size < 0 else min(max(size, CHUNK_BYTES), left)
        piece = _Slice(self.position, length)
        self.position += length
        return piece


class _PacedQueue:
    """The application's queue as daphne's request sees it: messages go through a deque
    and a feeder moves them on, reading each chunk's bytes, while the real queue holds
    fewer than QUEUED_CHUNKS of them. Messages keep their order."""

    def __init__(self, queue: asyncio.Queue, content):
        self.queue, self.content = queue, content
        self.pending: collections.deque = collections.deque()
        self.feeding: asyncio.Future[None] | None = None

    def put_nowait(self, message: dict) -> None:
        self.pending.append(message)
        if self.feeding is None or self.feeding.done():
            self.feeding = asyncio.ensure_future(self._feed())

    async def _feed(self) -> None:
        while self.pending:
            while self.queue.qsize() >= QUEUED_CHUNKS:
                await asyncio.sleep(0.0005)
            message = self.pending.popleft()
            body = message.get("body")
            if isinstance(body, _Slice):
                if self.content.closed:  # the client went away: daphne says so next
                    continue
                self.content.seek(body.offset)
                message = {**message, "body": self.content.read(body.length)}
            self.queue.put_nowait(message)

    def __getattr__(self, name):
        return getattr(self.queue, name)


class BoundedWebRequest(http_protocol.WebRequest):
    """daphne's request with a bounded, paced body (see the module doc)."""

    _received = 0
    _refused = False
    _app_queue = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # twisted would read a whole multipart body into memory to parse it into
        # request.args (which daphne never uses): Django parses the body itself, streaming.
        self._parsePOSTFormSubmission = False

    @property
    def application_queue(self):
        return self._app_queue

    @application_queue.setter
    def application_queue(self, queue):
        reader = getattr(self, "_slice_reader", None)
        if isinstance(queue, asyncio.Queue) and reader is not None:
            queue = _PacedQueue(queue, reader.content)
        self._app_queue = queue

    def gotLength(self, length):
        if length is not None and length > max_body_bytes():
            self._refuse()
            return
        super().gotLength(length)

    def handleContentChunk(self, data):
        if self._refused:
            return
        self._received += len(data)
        if self._received > max_body_bytes():
            self._refuse()
            return
        super().handleContentChunk(data)

    def process(self):
        if self._refused:
            return None
        upgrade = self.requestHeaders.getRawHeaders(b"Upgrade") or [b""]
        if upgrade[0].lower() != b"websocket" and self.content is not None:
            self._slice_reader = self.content = _SliceReader(self.content)
        return super().process()

    def _refuse(self) -> None:
        """Answer 413 at once and close: the rest of the body is never read."""
        if self._refused:
            return
        self._refused = True
        limit_mb = (max_body_bytes() - ENVELOPE_BYTES) / (1024 * 1024)
        body = (
            f"Upload refused: larger than this server accepts ({limit_mb:.0f} MB, "
            "PIWEB_MAX_UPLOAD_BYTES).\n"
        ).encode()
        head = (
            "HTTP/1.1 413 Payload Too Large\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        transport = self.channel.transport
        transport.write(head + body)
        transport.loseConnection()
        log.warning("refused a request body over %d bytes from %s", max_body_bytes(), self.client)


def install() -> None:
    """Make daphne's HTTP factory build BoundedWebRequest (idempotent)."""
    http_protocol.WebRequest = BoundedWebRequest


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
    django.setup()
    install()
    from daphne.cli import CommandLineInterface

    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
