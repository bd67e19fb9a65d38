"""Export a session as a pi session file (JSONL) that pi itself loads.

The header line first, then every entry in append (seq) order, each as JSON.stringify
writes it: no spaces, non-ASCII kept. Every entry is written back byte for byte as
stored (its `line`), so an imported session exports exactly as it came in.
Streams with `.iterator()`, so a 100,000-entry session never sits in memory.
"""

from __future__ import annotations

from collections.abc import Iterator

from sessions_app.context.jsonl import serialize_entry
from sessions_app.models import Entry, Session

CHUNK = 2000


def header_line(session: Session) -> str:
    return session.header_line or serialize_entry(session.header())


def iter_session_lines(session: Session) -> Iterator[str]:
    """The file's lines, each ending in a newline."""
    yield header_line(session) + "\n"
    rows = (
        Entry.objects.filter(session=session)
        .order_by("seq")
        .values_list("line", flat=True)
        .iterator(chunk_size=CHUNK)
    )
    for line in rows:
        yield line + "\n"


def iter_session_chunks(session: Session) -> Iterator[bytes]:
    """The file as byte chunks of about 1 MiB (lone surrogates kept, as stored): what a
    download streams, so the whole file never sits in memory."""
    buffer: list[bytes] = []
    size = 0
    for line in iter_session_lines(session):
        data = line.encode("utf-8", "surrogatepass")
        buffer.append(data)
        size += len(data)
        if size >= 1 << 20:
            yield b"".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield b"".join(buffer)


def export_to_file(session: Session, fileobj) -> int:
    """Write the session to a binary file object; returns the number of bytes."""
    written = 0
    for chunk in iter_session_chunks(session):
        fileobj.write(chunk)
        written += len(chunk)
    return written


def export_jsonl(session: Session) -> str:
    """The whole file as text (what the web export download serves)."""
    return "".join(iter_session_lines(session))


def export_bytes(session: Session) -> bytes:
    """The whole file in memory (small sessions, tests)."""
    import io

    out = io.BytesIO()
    export_to_file(session, out)
    return out.getvalue()
