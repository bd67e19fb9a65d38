"""Import pi session files (JSONL) into the database.

`import_jsonl_stream(fileobj, owner, filename=...)` is the one entry point (the
management command `import_pi_sessions` and the web upload both call it). It returns an
`ImportReport` or raises `SessionImportError` with a message meant for people; either
way nothing is half-imported: each file is one transaction.

Behaviour (pi's, see SPEC §3):
- the first line that parses is the header (`type: "session"` with a string id);
  `Session.pi_id` is the header id, entries keep their ids; malformed lines are skipped
  and reported with their line number and reason, like pi skips them;
- v1/v2 files are migrated to v3 with the pure core (`core.jsonl`); that migration
  needs the whole list (v1 compactions point at entries by index), so old files are
  read into memory. v3 files stream: each line is parsed and checked by the pure core
  (`core.import_lines`) and written to the database (EntryWriter), only ids and
  primary keys kept; each entry is stored as its line, as written;
- entries keep file order (`seq`); the leaf is the last entry, as pi does after loading;
- a parentId that points nowhere is stored (parent NULL, parent_pi_id kept) and
  reported as a warning; a parentId cycle or a duplicate entry id rejects the file;
- labels: the latest label entry per target wins, one without `label` removes it;
  the session name is the last session_info entry with a name;
- a header-only file is a valid, empty session (leaf None, as pi creates it);
- bytes that are not UTF-8 are replaced with U+FFFD (what pi's readFileSync does) and
  the line is reported in the warnings;
- re-import (same header id): the same content is "unchanged"; a file that grew (pi
  appends) adds only the new entries ("updated"); one stored entry written later than
  its place is accepted (piweb's exports end with the leaf); anything else is a
  conflict error, never a second session.
After the commit, `finish_import` does the derived work (search index; VACUUM on
PostgreSQL, the write-ahead log checkpoint on SQLite), inline or as a `search_index` job.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db import IntegrityError, connection, transaction
from django.db.models import Field
from django.utils import timezone

from sessions_app.core.errors import ServiceError
from sessions_app.core.import_lines import (
    MAX_LINE_BYTES,
    LinePreparer,
    PreparedEntry,
    RawObject,
    Skip,
    Warn,
    header_problem,
    header_text_field,
    id_problem,
    is_current_header,
    prepare_entry,
    stored_line,
    valid_id,
)
from sessions_app.core.input_limits import MAX_CWD_CHARS
from sessions_app.core.jsonl import (
    CURRENT_SESSION_VERSION,
    migrate_session_entries,
    parse_session_line,
    serialize_entry,
)
from sessions_app.core.read_ahead import FileDigest
from sessions_app.core.text import clean_text
from sessions_app.models import Activity, Session
from sessions_app.selectors.entries import entries_after, pks_by_pi_id
from sessions_app.selectors.sessions import imported_before, owned_session_among
from sessions_app.services import events
from sessions_app.services import sessions as sessions_service
from sessions_app.services.bulk_entries import (
    EntryWriter,
    apply_labels,
    deferred_wal_checkpoint,
    set_parents,
    tidy_entries,
)
from sessions_app.services.jobs.search_index import index_new_entries, request_index
from sessions_app.services.search import index_stored_entries
from sessions_app.services.usage import NEW_SESSION_FIELDS, apply_to_new_sessions, mark_fork_copies

log = logging.getLogger(__name__)

BATCH_SIZE = 2000
READ_CHUNK = 1 << 20
MAX_LISTED = 1000  # skipped lines / warnings listed in a report (the counts are exact)


class SessionImportError(ServiceError):
    """A file that cannot be imported; the message says why (and where)."""

    code = "import"

    def __init__(self, message: str, *, filename: str = ""):
        self.filename = filename
        super().__init__(f"{filename}: {message}" if filename else message)


@dataclass
class ImportReport:
    filename: str
    session: Session | None = None
    status: str = ""  # created | updated | unchanged
    entries_added: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line number, reason)
    skipped_count: int = 0
    warnings: list[str] = field(default_factory=list)
    warning_count: int = 0
    migrated_from: int | None = None  # original version when the file was migrated
    bytes_read: int = 0
    first_new_seq: int = 0
    import_seconds: float = 0.0
    after_commit_seconds: float = 0.0  # finish_import (VACUUM, search index), after commit
    after_commit_queued: bool = False  # finish_import was left to a search_index job

    @property
    def stored(self) -> Session:
        """The session of an import that did not raise (it always has one)."""
        if self.session is None:
            raise SessionImportError(f"{self.filename}: no session was stored")
        return self.session

    def skip(self, line_no: int, reason: str) -> None:
        self.skipped_count += 1
        if len(self.skipped) < MAX_LISTED:
            self.skipped.append((line_no, reason))

    def warn(self, message: str) -> None:
        self.warning_count += 1
        if len(self.warnings) < MAX_LISTED:
            self.warnings.append(message)

    def summary(self) -> str:
        parts = [f"{self.filename}: {self.status}"]
        if self.session is not None:
            parts.append(f"session {self.session.pi_id}")
        parts.append(f"{self.entries_added} entries added")
        if self.migrated_from is not None:
            parts.append(f"migrated from v{self.migrated_from}")
        if self.skipped_count:
            parts.append(f"{self.skipped_count} malformed line(s) skipped")
        if self.warning_count:
            parts.append(f"{self.warning_count} warning(s)")
        return ", ".join(parts)


# --- reading --------------------------------------------------------------------------


def _read_chunks(fileobj) -> Iterator[bytes]:
    while True:
        chunk = fileobj.read(READ_CHUNK)
        if not chunk:
            return
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8", "surrogatepass")
        yield chunk


def _records(fileobj, report: ImportReport, hasher) -> Iterator:
    """The file's records (see `core.import_lines`), in file order."""
    preparer = LinePreparer(MAX_LINE_BYTES)
    for chunk in _read_chunks(fileobj):
        report.bytes_read += len(chunk)
        hasher.update(chunk)
        yield from preparer.feed(chunk)
    yield from preparer.end()


# --- importing ------------------------------------------------------------------------


class _Import:
    def __init__(self, owner, report: ImportReport, batch_size: int, source_path: str = ""):
        self.owner = owner
        self.source_path = source_path
        self.report = report
        self.batch_size = batch_size
        self._stored: Session | None = None
        self.pks: dict[str, int] = {}  # pi id -> pk (ids only, never payloads)
        self.lines: dict[str, int] = {}  # pi id -> line number (new entries)
        self.parent_of: dict[str, str] = {}  # for the cycle check of forward references
        self.forward: list[tuple[int, str, int, str]] = []  # (pk, pi id, line, parent pi id)
        self.labels: dict[str, str] = {}
        self.name: str | None = None
        self.first_message = ""
        self.last_pi_id: str | None = None
        self.next_seq = 0
        self.existing: Iterator[tuple[str, str]] = iter(())
        self.existing_left = 0  # stored entries the file has not matched yet
        # A stored entry the file writes later than its place (piweb's exports end with
        # the leaf: selectors/exporter.py); one such entry is accepted.
        self.moved: tuple[str, str] | None = None
        self.moved_seen = False
        self.header_number = 0  # the header's line, and the lines skipped before it
        self.skipped_before_header = 0

    @property
    def session(self) -> Session:
        """The session the file's entries go to (found or made by its header)."""
        if self._stored is None:
            raise SessionImportError("the file's entries came before its session header")
        return self._stored

    # -- header ----------------------------------------------------------------------

    def start(self, header: dict, header_text: str, sha: str) -> None:
        existing = Session.objects.select_for_update().filter(pi_id=header["id"]).first()
        if existing is None:
            self._create(header, header_text, sha)
            return
        # Another user's session and a different session of yours with this id get the
        # same answer: the message must not tell whose session holds the id.
        same_header = existing.owner_id == self.owner.pk and (
            header_text_field(header, "cwd") == existing.cwd
            and clean_text(str(header.get("timestamp", "")))[:40] == existing.header_timestamp
        )
        if not same_header:
            raise SessionImportError(cannot_import_message(header["id"]))
        self._stored = existing
        if self.source_path and existing.source_path != self.source_path:
            existing.source_path = self.source_path  # saved by finish()
        self._start_writer()
        self.report.status = "unchanged"
        self.next_seq = existing.next_seq
        self.report.first_new_seq = existing.next_seq
        self.existing_left = existing.entry_count
        self.existing = self._iter_existing(existing)

    def _create(self, header: dict, header_text: str, sha: str) -> None:
        parent_ref = header.get("parentSession")
        parent_ref = clean_text(parent_ref)[:MAX_CWD_CHARS] if isinstance(parent_ref, str) else ""
        try:
            with transaction.atomic():
                self._stored = Session.objects.create(
                    pi_id=header["id"],
                    version=CURRENT_SESSION_VERSION,
                    cwd=header_text_field(header, "cwd"),
                    header_timestamp=clean_text(str(header.get("timestamp", "")))[:40],
                    parent_session_ref=parent_ref,
                    parent=_find_parent_session(parent_ref, self.owner),
                    owner=self.owner,
                    source=Session.Source.IMPORTED,
                    import_sha256=sha,
                    header_line=header_text,
                    source_path=self.source_path,
                )
        except IntegrityError as exc:
            raise SessionImportError(
                f"session {header['id']} is being imported by someone else right now; try again"
            ) from exc
        self._start_writer()
        self.report.status = "created"

    def _start_writer(self) -> None:
        # Search indexing waits for the commit (finish_import).
        self.writer = EntryWriter(self.session, batch_size=self.batch_size)

    def _iter_existing(self, session: Session) -> Iterator[tuple[str, str]]:
        """(pi id, line) of the stored entries in seq order, page by page."""
        last = -1
        while True:
            page = entries_after(session, last, self.batch_size)
            if not page:
                return
            for _seq, pk, pi_id, line in page:
                self.pks[pi_id] = pk
                yield pi_id, line
            last = page[-1][0]

    # -- entries ---------------------------------------------------------------------

    def add(self, entry: PreparedEntry) -> None:
        if self.existing_left:
            self._compare(entry)
            return
        eid = entry.eid
        if eid in self.lines or eid in self.pks:
            first = self.lines.get(eid)
            where = f"line {first}" if first else "an entry already stored"
            raise SessionImportError(
                f"line {entry.number}: duplicate entry id {eid!r} (first used on {where})"
            )
        self.lines[eid] = entry.number
        self._write(entry)

    def _compare(self, entry: PreparedEntry) -> None:
        stored_id: str | None
        if self.moved is not None and entry.eid == self.moved[0]:
            stored_id, stored_line = self.moved
            self.moved = None
        else:
            stored_id, stored_line = next(self.existing, (None, ""))
            if stored_id is not None and stored_id != entry.eid and not self.moved_seen:
                self.moved, self.moved_seen = (stored_id, stored_line), True
                stored_id, stored_line = next(self.existing, (None, ""))
        self.existing_left -= 1
        # The same entry written differently (spaces, escapes) is still the same entry.
        same = entry.eid == stored_id and (
            stored_line == entry.line
            or parse_session_line(stored_line)[0] == parse_session_line(entry.line)[0]
        )
        if not same:
            raise SessionImportError(
                f"line {entry.number}: entry {entry.eid!r} differs from the stored session "
                f"{self.session.pi_id} (stored entry {stored_id!r} at that position); the file "
                "is not the stored session nor a longer version of it, so nothing was imported"
            )
        if not self.existing_left:
            for _ in self.existing:  # let the pager finish filling self.pks
                pass

    def _write(self, entry: PreparedEntry) -> None:
        eid, pid = entry.eid, entry.pid
        pk = self.writer.new_pk()
        self.pks[eid] = pk
        if pid == eid:
            raise SessionImportError(
                f"line {entry.number}: parentId cycle: entry {eid!r} is its own parent; "
                "a session tree cannot loop, so nothing was imported"
            )
        parent_pk = None
        if pid:
            parent_pk = self.pks.get(pid)
            self.parent_of[eid] = pid
            if parent_pk is None:
                # Not seen yet (a forward reference) or nowhere: settled at the end.
                self.forward.append((pk, eid, entry.number, pid))
        if entry.effect is not None:
            self._apply_effect(entry, entry.effect)
        self.writer.add(
            pk=pk,
            pi_id=eid,
            parent_pk=parent_pk,
            parent_pi_id=pid,
            seq=self.next_seq,
            line=entry.line,
            columns=entry.columns,
            usage=entry.usage,
        )
        self.next_seq += 1
        self.last_pi_id = eid
        self.report.entries_added += 1

    def _apply_effect(self, entry: PreparedEntry, effect: tuple) -> None:
        kind = effect[0]
        if kind == "label":
            self.labels[effect[1]] = effect[2]
        elif kind == "name":
            self.name = effect[1]
        elif kind == "user" and not self.first_message:
            self.first_message = entry.columns[4]  # the preview

    # -- the end ---------------------------------------------------------------------

    def finish(self, sha: str) -> None:
        if self.existing_left:
            raise SessionImportError(
                f"the stored session {self.session.pi_id} has {self.existing_left} entries "
                "that are not in this file (it was changed after the import, or the file is "
                "older); nothing was imported"
            )
        if self.report.status == "created" and not self.report.entries_added:
            self._refuse_if_no_entry_was_valid()
        self._apply_new_entries()
        session = self.session
        if self.report.status == "unchanged":
            Session.objects.filter(pk=session.pk).update(
                import_sha256=sha, source_path=session.source_path
            )
            session.import_sha256 = sha
            return
        session.import_sha256 = sha
        session.save()

    def _apply_new_entries(self) -> None:
        """Write what is queued and update the session row (not saved) for the entries
        added: labels, name, first message, leaf, counts."""
        self.writer.close()
        set_parents(self._forward_parents())
        if self.report.status == "created":
            mark_fork_copies(self.session)  # a pi fork of a stored session: count its copies once
        if self.report.entries_added:
            if self.report.status == "unchanged":
                self.report.status = "updated"
            apply_labels(self.session, self._known_labels())
            self._count_new_entries()

    def _known_labels(self) -> dict[str, str]:
        return {t: lab for t, lab in self.labels.items() if t in self.pks}

    def _count_new_entries(self) -> None:
        """The session row's columns for the entries added (on the object, not saved)."""
        session = self.session
        if self.name is not None:
            session.name = clean_text(self.name)[:500]
        if not session.first_message and self.first_message:
            session.first_message = clean_text(self.first_message)[:300]
        if self.last_pi_id is not None:  # (always, once an entry was added)
            session.leaf_id = self.pks[self.last_pi_id]
        session.next_seq = self.next_seq
        session.entry_count += self.report.entries_added

    def _refuse_if_no_entry_was_valid(self) -> None:
        """A file with entry lines of which none could be read is refused (a header-only
        file is a valid empty session: pi writes the header first)."""
        count = self.report.skipped_count - self.skipped_before_header
        if not count:
            return
        skipped = [(n, r) for n, r in self.report.skipped if n > self.header_number]
        reasons = "; ".join(f"line {n}: {r}" for n, r in skipped[:3])
        raise SessionImportError(
            f"none of the {count:,} entry line(s) could be read ({reasons}); nothing was imported"
        )

    def _forward_parents(self) -> list[tuple[int, int]]:
        """(entry pk, parent pk) of the forward references that found their parent (the
        others are reported); a parentId cycle raises."""
        resolved: list[tuple[int, int]] = []
        for pk, eid, line_no, pid in self.forward:
            parent_pk = self.pks.get(pid)
            if parent_pk:
                resolved.append((pk, parent_pk))
            else:
                self.report.warn(
                    f"line {line_no}: entry {eid!r} has parentId {pid!r}, which is not in the "
                    "file; stored as a root with its parentId kept"
                )
        if resolved:
            self._check_cycles([eid for _, eid, _, pid in self.forward if pid in self.pks])
        return resolved

    def _check_cycles(self, starts: list[str]) -> None:
        """A cycle needs a forward reference, so walking up from those finds every one."""
        done: set[str] = set()
        parent_of = self.parent_of
        for start in starts:
            walk: list[str] = []
            on_walk: set[str] = set()
            current: str | None = start
            while current is not None and current not in done:
                if current in on_walk:
                    cycle = walk[walk.index(current) :]
                    shown = " -> ".join(cycle[:10]) + (" ..." if len(cycle) > 10 else "")
                    raise SessionImportError(
                        f"parentId cycle: {shown} -> {current} (line {self.lines.get(current)}); "
                        "a session tree cannot loop, so nothing was imported"
                    )
                on_walk.add(current)
                walk.append(current)
                current = parent_of.get(current)
                if current is not None and current not in self.pks:
                    current = None
            done.update(walk)


def cannot_import_message(session_id: str) -> str:
    """Why a file whose header id is taken cannot be imported (the same words whoever
    holds the id)."""
    return (
        f"session {session_id} cannot be imported: its id is already taken, and this file "
        "cannot be added to that session; nothing was imported"
    )


def _find_parent_session(parent_ref: str, owner) -> Session | None:
    """pi's parentSession is a file path ending in <id>.jsonl (or here, a plain id)."""
    if not parent_ref:
        return None
    candidates = {parent_ref}
    match = re.search(r"([0-9a-fA-F-]{8,64})\.jsonl$", parent_ref)
    if match:
        candidates.add(match.group(1))
    return owned_session_among(candidates, owner)


def _file_sha256(fileobj) -> str | None:
    """sha256 of a seekable file (then rewound); None when it cannot be read twice."""
    try:
        if not fileobj.seekable():
            return None
        start = fileobj.tell()
    except (AttributeError, OSError, ValueError):
        return None
    hasher = hashlib.sha256()
    for chunk in _read_chunks(fileobj):
        hasher.update(chunk)
    fileobj.seek(start)
    return hasher.hexdigest()


def import_jsonl_stream(
    fileobj,
    owner,
    *,
    filename: str = "",
    batch_size: int = BATCH_SIZE,
    after_commit: str = "inline",
    source_path: str = "",
) -> ImportReport:
    """Import one pi session file from a binary (or text) file object. See the module doc.

    The import is one transaction; `finish_import` follows its commit (search indexing,
    derived data): `after_commit="inline"` runs it here, `"worker"` leaves it to a
    `search_index` job, `"off"` leaves it to the caller.
    `report.import_seconds` and `report.after_commit_seconds` time the two steps.
    `source_path`: the file's path on this machine (imports from disk), kept on the session
    so its page can offer `pi --session PATH`.
    """
    started = time.perf_counter()
    report = ImportReport(filename=filename or getattr(fileobj, "name", "") or "upload")
    sha_before = _file_sha256(fileobj)
    if sha_before is not None:
        done = imported_before(sha_before, owner)
        if done is not None:
            report.session = done
            report.status = "unchanged"
            return report
    hasher = hashlib.sha256()
    try:
        with deferred_wal_checkpoint(), transaction.atomic():
            job = _run(fileobj, owner, report, hasher, batch_size, source_path)
            if report.status in ("created", "updated"):
                _import_activity(report, owner).save()
                events.publish_sessions_changed([job.session.pk])
                if report.status == "updated":
                    events.publish(job.session.pk, "leaf_moved", {"leaf": job.last_pi_id or None})
    except SessionImportError as exc:
        if not exc.filename:
            raise SessionImportError(str(exc), filename=report.filename) from exc
        raise
    report.import_seconds = time.perf_counter() - started
    if report.entries_added and after_commit != "off":
        started = time.perf_counter()
        finish_imports(search_work([report]), where=after_commit)
        if after_commit == "worker":
            report.after_commit_queued = True
        else:
            report.after_commit_seconds = time.perf_counter() - started
    return report


# --- many new sessions in one transaction (the follower's first scan) ------------------


def batchable_header(first_line: bytes) -> tuple[dict, str] | None:
    """(header, stored header line) when a file whose first line is `first_line` (with
    its newline) can be imported by `NewSessionsBatch`: a v3 header with a valid id,
    read without a warning, naming no parent session (a fork's parent is looked up, so
    forks are imported alone, in their turn). None: import the file alone."""
    records = LinePreparer(MAX_LINE_BYTES).feed(first_line)
    if len(records) != 1 or not isinstance(records[0], RawObject) or records[0].number != 1:
        return None
    header = records[0].value
    if header_problem(header) or not is_current_header(header) or not valid_id(header["id"]):
        return None
    parent_ref = header.get("parentSession")
    if isinstance(parent_ref, str) and parent_ref:
        return None
    return header, stored_line(records[0].text, header)


@dataclass
class NewSessionFile:
    header: dict  # from batchable_header
    header_line: str
    filename: str
    source_path: str = ""


class NewSessionsBatch:
    """New session files, imported in the caller's transaction exactly as
    `import_jsonl_stream` imports each (same rows, same report), with the work that does
    not need a file's own rows done once for all of them: the sessions are created in one
    INSERT, entries of all files go through one writer (one COPY on PostgreSQL), and
    usage rows, session columns and activity rows are written by `finish()`.

    The caller checks that no session holds the header ids (and that the ids differ).
    A file that cannot be imported raises SessionImportError from `add()`: the caller
    then rolls its transaction back and imports the files one by one. After the commit,
    `finish_imports(batch.search_work())` indexes the new entries for search.
    """

    def __init__(self, owner, files: list[NewSessionFile], *, batch_size: int = BATCH_SIZE):
        self.owner = owner
        self.files = files
        self.batch_size = batch_size
        self.sessions = Session.objects.bulk_create(
            [
                Session(
                    pi_id=new.header["id"],
                    version=CURRENT_SESSION_VERSION,
                    cwd=header_text_field(new.header, "cwd"),
                    header_timestamp=clean_text(str(new.header.get("timestamp", "")))[:40],
                    owner=owner,
                    source=Session.Source.IMPORTED,
                    header_line=new.header_line,
                    source_path=new.source_path,
                )
                for new in files
            ]
        )
        self.writer = EntryWriter(self.sessions[0], batch_size=batch_size, defer_usage=True)
        self.reports: list[ImportReport] = []
        self.parents: list[tuple[int, int]] = []  # forward references, for set_parents
        self.labels: list[tuple[Session, dict[str, str]]] = []

    def __enter__(self) -> NewSessionsBatch:
        self.writer.__enter__()
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is not None:
            self.writer.__exit__(exc_type, exc, traceback)  # cancels an open COPY

    def add(self, prepared: Iterator) -> tuple[ImportReport, FileDigest]:
        """Import the next file (`files[len(reports)]`) from its prepared records
        (`core.read_ahead.prepare_file`, run here or by a helper process)."""
        started = time.perf_counter()
        index = len(self.reports)
        new, session = self.files[index], self.sessions[index]
        if index:
            self.writer.next_session(session)
        report = ImportReport(filename=new.filename, session=session, status="created")
        job = _Import(self.owner, report, self.batch_size, new.source_path)
        job._stored, job.writer = session, self.writer
        digest = None
        try:
            for item in prepared:
                if isinstance(item, FileDigest):
                    digest = item
                    break
                for record in item:
                    if isinstance(record, PreparedEntry):
                        job.add(record)
                    elif job.header_number:
                        _note(record, report)
                    else:
                        self._check_header(record, new, job)
            if digest is None or not job.header_number:
                raise SessionImportError("the file changed while it was read")
            if not report.entries_added:
                job._refuse_if_no_entry_was_valid()
            self.parents.extend(job._forward_parents())
        except SessionImportError as exc:
            if not exc.filename:
                raise SessionImportError(str(exc), filename=report.filename) from exc
            raise
        if report.entries_added:
            job._count_new_entries()
            labels = job._known_labels()
            if labels:
                self.labels.append((session, labels))
        report.bytes_read = digest.end
        session.import_sha256 = digest.sha256
        self.reports.append(report)  # (the job and its maps of ids go)
        report.import_seconds = time.perf_counter() - started
        return report, digest

    @staticmethod
    def _check_header(record, new: NewSessionFile, job: _Import) -> None:
        """The file's first record must be the header `batchable_header` read."""
        if not isinstance(record, RawObject) or record.value.get("id") != new.header["id"]:
            raise SessionImportError("the file changed while it was read")
        job.header_number = record.number

    def finish(self) -> list[ImportReport]:
        """The writes left for all the files added; returns their reports."""
        self.writer.close()
        set_parents(self.parents)
        for session, labels in self.labels:
            apply_labels(session, labels)
        apply_to_new_sessions(self.writer.recorded)
        sessions = [report.session for report in self.reports if report.session is not None]
        now = timezone.now()
        for session in sessions:
            session.modified_at = now
        _save_columns(
            sessions,
            [
                "name",
                "first_message",
                "leaf",
                "next_seq",
                "entry_count",
                "import_sha256",
                "modified_at",
                *NEW_SESSION_FIELDS,
            ],
        )
        Activity.objects.bulk_create([_import_activity(r, self.owner) for r in self.reports])
        events.publish_sessions_changed([session.pk for session in sessions])
        return self.reports


def _import_activity(report: ImportReport, owner) -> Activity:
    """The activity row of an import that added entries (not saved)."""
    if report.session is None:
        raise ValueError("an import's activity needs its session")
    return sessions_service.new_activity(
        report.session,
        owner,
        "imported",
        filename=report.filename,
        status=report.status,
        entries_added=report.entries_added,
        skipped_lines=report.skipped_count,
        warnings=report.warning_count,
    )


def _column(name: str) -> tuple[Field, str]:
    """A Session field stored in a column of its own, and that column's name."""
    field = Session._meta.get_field(name)
    if not isinstance(field, Field) or field.column is None:
        raise TypeError(f"Session.{name} is not a column")
    return field, field.column


def _save_columns(sessions: list[Session], names: list[str]) -> None:
    """UPDATE these columns of many sessions, one statement run for each (Django's
    bulk_update builds a CASE per column and row, which costs more than the rows)."""
    columns = [_column(name) for name in names]
    fields = [field for field, _ in columns]
    assignments = ", ".join(f"{connection.ops.quote_name(column)} = %s" for _, column in columns)
    rows = [
        [f.get_db_prep_save(getattr(session, f.attname), connection) for f in fields] + [session.pk]
        for session in sessions
    ]
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {Session._meta.db_table} SET {assignments} WHERE id = %s", rows)


def search_work(reports: list[ImportReport]) -> list[tuple[int, int]]:
    """(session pk, first new seq) of the reports that added entries: what
    `finish_imports` indexes."""
    return [
        (r.session.pk, r.first_new_seq)
        for r in reports
        if r.entries_added and r.session is not None
    ]


def finish_imports(work: list[tuple[int, int]], *, where: str = "inline") -> None:
    """`finish_import` for imports committed together (one or more): the tidying once,
    then each session's search indexing; `where="worker"` leaves it all to one
    `search_index` job (sent after the caller's commit, if it has a transaction open)."""
    if not work:
        return
    if where == "worker":
        request_index(work, tidy=True)
        return
    finish_import(*work[0])
    for session_pk, from_seq in work[1:]:
        index_stored_entries(session_pk, from_seq)


# --- appending (the follower) -----------------------------------------------------------

APPEND_SEGMENT = 2000  # records looked up and written together


class _Append(_Import):
    """The entries of lines appended to a session's file since the last read. Stored
    entries are looked up by id only where a new line refers to one (a parent, a label
    target, a repeated id), a segment at a time, so an append costs what it adds."""

    def begin(self, session_pk: int) -> None:
        self._stored = Session.objects.select_for_update().get(pk=session_pk)
        self._start_writer()
        self.report.session = self.session
        self.report.status = "unchanged"
        self.next_seq = self.session.next_seq
        self.report.first_new_seq = self.next_seq
        self.last_type = ""

    def add_segment(self, records: list) -> None:
        entries = [r for r in records if isinstance(r, PreparedEntry)]
        wanted = set()
        for entry in entries:
            wanted.add(entry.eid)
            if entry.pid:
                wanted.add(entry.pid)
            if entry.effect is not None and entry.effect[0] == "label":
                wanted.add(entry.effect[1])
        wanted -= self.pks.keys()
        if wanted:
            self.writer.close()  # end a COPY before querying
            stored = pks_by_pi_id(self.session, wanted)
            self.pks.update(stored)
        for record in records:
            if isinstance(record, PreparedEntry):
                self.add(record)
                self.last_type = record.columns[0]
            else:
                _note(record, self.report)

    def finish_append(self) -> None:
        self._apply_new_entries()
        if not self.report.entries_added:
            return
        self.report.status = "updated"
        # The file's hash is no longer known without reading it all: an upload of the
        # same file is then compared entry by entry (and found unchanged).
        self.session.import_sha256 = ""
        self.session.save()


def append_lines(
    session_pk: int, owner, fileobj, *, lines_before: int, filename: str = ""
) -> ImportReport:
    """Add the entries of complete lines appended to a v3 session file that was imported
    up to its line `lines_before`; `fileobj` holds exactly the appended bytes (whole
    lines). The per-line work is the importer's (`core.import_lines`), so a line is
    stored exactly as an upload would store it. One transaction (the caller may wrap it
    in its own, to commit its read position with the entries); open pages get an
    `entry_appended` event, and the new entries are indexed for search
    (`jobs.search_index.index_new_entries`: a few at once, many by a job after the
    commit).
    """
    started = time.perf_counter()
    report = ImportReport(filename=filename or getattr(fileobj, "name", "") or "append")
    try:
        with transaction.atomic():
            job = _Append(owner, report, BATCH_SIZE)
            job.begin(session_pk)
            preparer = LinePreparer(MAX_LINE_BYTES, lines_before=lines_before)
            with job.writer:
                pending: list = []
                for chunk in _read_chunks(fileobj):
                    report.bytes_read += len(chunk)
                    pending.extend(preparer.feed(chunk))
                    if len(pending) >= APPEND_SEGMENT:
                        job.add_segment(pending)
                        pending = []
                pending.extend(preparer.end())
                job.add_segment(pending)
                job.finish_append()
            if report.entries_added:
                last = job.last_pi_id
                events.publish(
                    session_pk,
                    "entry_appended",
                    {
                        "id": last,
                        "parentId": job.parent_of.get(last) if last else None,
                        "type": job.last_type,
                        "leaf": last,
                        "count": report.entries_added,
                    },
                )
                events.publish_sessions_changed([session_pk])
                index_new_entries(session_pk, report.first_new_seq, report.entries_added)
    except SessionImportError as exc:
        if not exc.filename:
            raise SessionImportError(str(exc), filename=report.filename) from exc
        raise
    report.import_seconds = time.perf_counter() - started
    return report


def finish_import(session_pk: int, from_seq: int) -> int:
    """The work that follows an import's commit. None of it is needed to open the session,
    and all of it is idempotent: on PostgreSQL, VACUUM marks the new rows all-visible, so
    the parent links of a big session are then read from an index alone; on SQLite, the
    pages the import left in the write-ahead log are copied into the database file (the
    import's commit skipped that); then the new entries are indexed for search. Returns
    the number of entries indexed."""
    tidy_entries()
    return index_stored_entries(session_pk, from_seq)


def _run(
    fileobj, owner, report: ImportReport, hasher, batch_size: int, source_path: str = ""
) -> _Import:
    records = _records(fileobj, report, hasher)
    for record in records:
        if isinstance(record, RawObject):
            return _import_from_header(
                record, records, owner, report, hasher, batch_size, source_path
            )
        _note(record, report)
    if report.bytes_read == 0 or not report.skipped_count:
        raise SessionImportError("the file is empty: no session header")
    reasons = "; ".join(f"line {n}: {r}" for n, r in report.skipped[:3])
    raise SessionImportError(f"no line could be read ({report.skipped_count} malformed: {reasons})")


def _note(record: Skip | Warn, report: ImportReport) -> None:
    if isinstance(record, Skip):
        report.skip(record.number, record.reason)
    else:
        report.warn(record.message)


def _import_from_header(
    first: RawObject,
    records: Iterator,
    owner,
    report: ImportReport,
    hasher,
    batch_size: int,
    source_path: str = "",
) -> _Import:
    """The import once the first object (the header) is read; `records` is the rest."""
    header = first.value
    problem = header_problem(header, first.number)
    if problem:
        raise SessionImportError(f"{problem}; pi cannot load this file either")
    problem = id_problem("the session header id", header["id"])
    if problem:
        raise SessionImportError(f"line {first.number}: {problem}; the file was not imported")
    job = _Import(owner, report, batch_size, source_path)
    job.header_number, job.skipped_before_header = first.number, report.skipped_count
    if is_current_header(header):
        # The sha is known only at the end: start with a placeholder, set it in finish().
        job.start(header, stored_line(first.text, header), "")
        with job.writer:
            for record in records:
                if isinstance(record, PreparedEntry):
                    job.add(record)
                else:
                    _note(record, report)
            job.finish(hasher.hexdigest())
    else:
        # v1/v2: pi's migration needs the whole list (v1 compactions point by index).
        items = [header]
        numbers = [first.number]
        for record in records:
            if isinstance(record, RawObject):
                items.append(record.value)
                numbers.append(record.number)
            else:
                _note(record, report)
        version = header.get("version")
        report.migrated_from = version if isinstance(version, int) else 1
        migrate_session_entries(items)
        job.start(header, serialize_entry(header), "")
        with job.writer:
            for number, value in zip(numbers[1:], items[1:], strict=True):
                entry = prepare_entry(number, value, None)
                if isinstance(entry, Skip):
                    _note(entry, report)
                else:
                    job.add(entry)
            job.finish(hasher.hexdigest())
    report.session = job.session
    return job
