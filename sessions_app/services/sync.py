"""Pi session files sent by the sync client from a user's own machine (`piweb_sync.py`),
through the token API (`views/sync_api.py`).

A file is a `SyncedFile` (owner, client name, path on the client) holding how far the
server has it (`offset`, the end of its last complete line). The client sends a file's
complete lines with the byte offset they start at:

- at the server's offset: appended by the follower's line handling
  (`importer.append_lines`), or for a new file imported from its header line
  (`importer.import_jsonl_stream`), so a line is stored as an upload would store it;
- before it: the part the server already has must be the same lines (each compared with
  its stored entry), the rest is appended; the same batch sent twice changes nothing;
- after it (a gap), or lines that differ: `SyncConflict` (409) with the server's offset;
- a file the client saw rewritten is sent whole (`rewrite`): imported as a re-import,
  which adds only what the session lacks, and followed from its new end.

Like the follower's, a push commits without waiting for the disk (`following.
file_transaction`): the client keeps its offset only once the server answered, so a
commit lost in a database crash only means those lines are sent again.

Entries piweb adds to a synced session (`sessions.append_entry`, a reviewer continuing
it in the browser) are listed in `pending` until they come back in the client's file:
the client reads them (`pending_lines`), appends them to pi's file when pi is quiet, and
sends them like any other lines; those already stored are not added twice.
"""

from __future__ import annotations

import io
import json

from django.conf import settings
from django.utils import timezone

from sessions_app.core.errors import ServiceError
from sessions_app.core.import_lines import stored_line
from sessions_app.models import Session, SyncedFile
from sessions_app.selectors.entries import stored_lines
from sessions_app.selectors.sync import synced_file, synced_file_by_pk
from sessions_app.services import entry_written, following, importer
from sessions_app.services import sessions as sessions_service
from sessions_app.services.jobs import search_index

MAX_CLIENT_CHARS = 100
MAX_PATH_CHARS = 4096


class SyncConflict(ServiceError):
    """The lines sent do not continue the file the server holds; `offset` is where it
    ends on the server, so the client can send from there."""

    status = 409
    code = "conflict"

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


def _check_identity(client: str, path: str) -> None:
    if not client or len(client) > MAX_CLIENT_CHARS:
        raise ServiceError(f"The client name must have 1 to {MAX_CLIENT_CHARS} characters.")
    if not path or len(path) > MAX_PATH_CHARS or "\x00" in path:
        raise ServiceError(f"The path must have 1 to {MAX_PATH_CHARS} characters.")


def _check_size(offset: int, data: bytes) -> None:
    if offset < 0:
        raise ServiceError("The offset cannot be negative.")
    if offset + len(data) > settings.PIWEB_MAX_UPLOAD_BYTES:
        raise ServiceError(
            f"The file would be over {settings.PIWEB_MAX_UPLOAD_BYTES} bytes, the most "
            "piweb takes.",
            status=413,
            code="too_large",
        )
    if data and not data.endswith(b"\n"):
        raise ServiceError("Send complete lines only: the data must end with a newline.")


def _split(data: bytes) -> list[bytes]:
    """The lines of `data` (which ends with a newline), each with its newline."""
    return data.splitlines(keepends=True)


def push(
    owner, client: str, path: str, offset: int, data: bytes, *, rewrite: bool = False
) -> SyncedFile:
    """Store the complete lines `data` that start at byte `offset` of the client's file
    (see the module doc); returns the file's row as it now is."""
    _check_identity(client, path)
    _check_size(offset, data)
    if rewrite:
        return _push_whole(owner, client, path, offset, data)
    row = synced_file(owner, client, path)
    if row is None or row.session_id is None:
        return _push_whole(owner, client, path, offset, data)
    with following.file_transaction():
        sessions_service.lock_session(row.session_id)  # (append_entry's lock order)
        row = SyncedFile.objects.select_for_update().get(pk=row.pk)
        session = row.session
        if session is None:  # deleted while this request waited for the lock
            raise SyncConflict("The server no longer holds this file: send it whole.", 0)
        if offset > row.offset:
            raise SyncConflict(
                f"There is a gap: the server has this file up to byte {row.offset}.", row.offset
            )
        new = _new_part(row, session, offset, data)
        if new:
            _append(row, session, new, f"{client}:{path}")
    return synced_file_by_pk(row.pk)


def _push_whole(owner, client, path, offset, data) -> SyncedFile:
    """A new file (or one sent whole after a rewrite): imported from its header line."""
    if offset != 0:
        row = synced_file(owner, client, path)
        held = row.offset if row is not None and row.session_id else 0
        raise SyncConflict(f"The server has this file up to byte {held}; send it from there.", held)
    if not data:
        raise ServiceError("A new file starts with its session header line.")
    with following.file_transaction():
        report = importer.import_jsonl_stream(
            io.BytesIO(data), owner, filename=f"{client}:{path}", after_commit="off"
        )
        row, _ = SyncedFile.objects.select_for_update().get_or_create(
            owner=owner, client=client, client_path=path
        )
        row.session = report.session
        row.offset = len(data)
        row.lines = data.count(b"\n")
        row.pending = _still_pending(row.pending, data)
        row.last_pushed_at = timezone.now()
        row.save()
    if report.entries_added:
        # (a few entries are indexed here, so search finds them at once; a backlog by a
        # job, as for uploads, so the client is not held up)
        many = report.entries_added > search_index.INLINE_INDEX_LIMIT
        importer.finish_imports(
            importer.search_work([report]), where="worker" if many else "inline"
        )
    return synced_file_by_pk(row.pk)


def _still_pending(pending: list[str], data: bytes) -> list[str]:
    """The pending ids that `data` (lines of the client's file) does not hold."""
    return [pi_id for pi_id in pending if _id_mark(pi_id) not in data]


def _id_mark(pi_id: str) -> bytes:
    return b'"id":' + json.dumps(pi_id).encode()


def _line_id(line: bytes) -> str | None:
    """The id of a line that is an entry object; None for anything else."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if isinstance(value, dict) and value.get("type") != "session":
        pi_id = value.get("id")
        return pi_id if isinstance(pi_id, str) else None
    return None


def _same_as_stored(session: Session, lines: list[bytes]) -> bool:
    """Whether these lines (already held by the server) are what it stores for them."""
    ids = {}
    for line in lines:
        text = line.rstrip(b"\r\n").decode("utf-8", "replace")
        try:
            value = json.loads(text)
        except ValueError:
            continue  # a malformed line: skipped by the importer, nothing to compare
        if isinstance(value, dict) and value.get("type") == "session":
            if stored_line(text, value) != session.header_line:
                return False
        elif isinstance(value, dict) and isinstance(value.get("id"), str):
            ids[value["id"]] = stored_line(text, value)
    stored = stored_lines(session, ids)
    return all(stored.get(pi_id) == line for pi_id, line in ids.items())


def _new_part(row: SyncedFile, session: Session, offset: int, data: bytes) -> bytes:
    """The bytes of `data` past what the server holds, after checking the overlap."""
    overlap = row.offset - offset
    if overlap <= 0:
        return data
    held = data[:overlap]
    if (len(data) >= overlap and not held.endswith(b"\n")) or not _same_as_stored(
        session, _split(held)
    ):
        raise SyncConflict(
            f"These lines differ from what the server holds at byte {offset}; it has the "
            f"file up to byte {row.offset}.",
            row.offset,
        )
    return data[overlap:]


def _append(row: SyncedFile, session: Session, new: bytes, filename: str) -> None:
    """Append the new lines to the session (piweb's own lines, written back by the
    client, are stored already: they only leave `pending`)."""
    lines = _split(new)
    fresh = lines
    if row.pending:
        marks = {pi_id: _id_mark(pi_id) for pi_id in row.pending}
        written = set()
        fresh = []
        for line in lines:
            pi_id = next((i for i, mark in marks.items() if mark in line), None)
            if pi_id is not None and _line_id(line) == pi_id:
                written.add(pi_id)
            else:
                fresh.append(line)
        row.pending = [pi_id for pi_id in row.pending if pi_id not in written]
    if fresh:
        importer.append_lines(
            session.pk,
            row.owner,
            io.BytesIO(b"".join(fresh)),
            lines_before=row.lines,
            filename=filename,
        )
    row.offset += len(new)
    row.lines += len(lines)
    row.last_pushed_at = timezone.now()
    row.save()


def note_appended(written: entry_written.EntryWritten) -> None:
    """In the writer's transaction, with the session row locked: an entry piweb added to
    a synced session waits for its client to write it back."""
    session, pi_id = written.session, written.entry.pi_id
    for row in SyncedFile.objects.select_for_update().filter(session=session):
        row.pending = [*row.pending, pi_id]
        row.save(update_fields=["pending"])


entry_written.subscribe(entry_written.Subscriber("sync", in_transaction=note_appended))
