"""Export a session as a pi session file (JSONL) that pi itself loads.

The header line first, then every entry in append (seq) order, each as JSON.stringify
writes it: no spaces, non-ASCII kept. Every entry is written back byte for byte as
stored (its `line`), so an imported session exports exactly as it came in.
Streams with `.iterator()`, so a 100,000-entry session never sits in memory.

pi takes a file's last entry as its leaf, so the file ends with piweb's leaf: when the
leaf is not the newest entry (the leaf was moved, a fork kept entries after its target,
a job finished on another branch), its line is written last instead of in its place.
pi links entries by parentId whatever their order, so nothing else changes. A session
whose leaf is None but that has entries ends with a `custom` root entry of type
LEAF_MARKER_TYPE (no context in pi). docs/PI_COMPATIBILITY.md, "Exports and the leaf".
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from sessions_app.core.jsonl import serialize_entry
from sessions_app.models import Entry, Session

CHUNK = 2000
LEAF_MARKER_TYPE = "piweb.leaf"


def _leaf_marker(session: Session) -> str:
    """A context-free root entry that makes pi open a leaf-None session with no context.

    Its id and timestamp derive from the session, so exporting twice gives the same file.
    """
    taken = set(Entry.objects.filter(session=session).values_list("pi_id", flat=True))
    seed = session.pi_id.encode()
    counter = 0
    while True:
        marker_id = hashlib.sha256(seed + str(counter).encode()).hexdigest()[:8]
        if marker_id not in taken:
            break
        counter += 1
    last_stamp = (
        Entry.objects.filter(session=session).order_by("-seq").values_list("timestamp", flat=True)
    ).first()
    return serialize_entry(
        {
            "type": "custom",
            "id": marker_id,
            "parentId": None,
            "timestamp": last_stamp or session.header_timestamp,
            "customType": LEAF_MARKER_TYPE,
            "data": {"leaf": None},
        }
    )


def _leaf_placement(session: Session) -> tuple[int | None, str | None]:
    """(pk of the entry to hold back, line to write last), or (None, None) when the
    file already ends with the leaf (always so for an unchanged import)."""
    if session.leaf_id is None:
        if not Entry.objects.filter(session=session).exists():
            return None, None
        return None, _leaf_marker(session)
    last_pk = (
        Entry.objects.filter(session=session).order_by("-seq").values_list("pk", flat=True)
    ).first()
    if last_pk == session.leaf_id:
        return None, None
    line = Entry.objects.filter(pk=session.leaf_id).values_list("line", flat=True).first()
    return (session.leaf_id, line) if line is not None else (None, None)


def header_line(session: Session) -> str:
    return session.header_line or serialize_entry(session.header())


def iter_session_lines(session: Session) -> Iterator[str]:
    """The file's lines, each ending in a newline."""
    yield header_line(session) + "\n"
    held_back, last_line = _leaf_placement(session)
    rows = Entry.objects.filter(session=session)
    if held_back is not None:
        rows = rows.exclude(pk=held_back)
    for line in rows.order_by("seq").values_list("line", flat=True).iterator(chunk_size=CHUNK):
        yield line + "\n"
    if last_line is not None:
        yield last_line + "\n"


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
