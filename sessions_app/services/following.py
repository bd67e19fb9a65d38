"""Following pi's session folders: what happens when a session file appears, grows, is
rewritten, renamed or deleted (the `watch_pi_sessions` command calls these).

Each file has a FollowedFile row: how far it was read (`offset`, the end of the last
complete line, and `lines` before it) and fingerprints (`core.file_marks`). Entries
and the new read position are committed in one transaction, so a follower that stops
anywhere resumes exactly where the last commit left it: nothing twice, nothing missed.

- a new file, or one that was rewritten (another inode, shorter than what was read, or
  a different first block or block before `offset`), is read whole by the importer
  (`import_jsonl_stream`), which creates the session or adds only the entries it lacks:
  applying a rewrite twice changes nothing;
- a file that grew past `offset` is read from there (`importer.append_lines`); a line
  without its newline yet is left for the next read, never parsed half-written;
- a deleted file leaves its session, marked gone from disk; a file that shows up with
  the inode and first block of a known one is that file, renamed;
- the follower's transactions commit without waiting for the write-ahead log to reach
  the disk (PostgreSQL's `synchronous_commit = off`): entries and offset are one
  transaction, so a commit lost in a database crash only means those lines are read
  from the file again; not waiting for a flush per file is most of the first scan's
  and the live appends' time on a busy disk. They also compress long lines with lz4
  rather than PostgreSQL's default pglz (where the server has it): pglz held the
  server to about the speed of the parsing, lz4 is three times faster (the rows take
  about a third more room);
- the first scan imports new files many per transaction (see "new files, many at a
  time" below): the same rows as one by one, without the fixed cost per file;
- a file the importer refuses (not a pi session) is reported once and then left alone
  until it changes; errors (permissions, a file that vanished mid-read) are logged with
  the path, once per distinct message, and the file is tried again on its next change.
"""

from __future__ import annotations

import gc
import logging
import os
import stat as stat_module
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from sessions_app.core.file_marks import RangeReader, complete_length, marks_at
from sessions_app.core.read_ahead import ReadAhead, prepared_files
from sessions_app.models import FollowedFile, Session
from sessions_app.selectors import pi_file
from sessions_app.selectors.sessions import stored_pi_ids
from sessions_app.services import events, importer
from sessions_app.services.bulk_entries import deferred_wal_checkpoint

log = logging.getLogger("piweb.follow")

SCAN_BATCH = 500  # paths whose stored state is fetched in one query
State = FollowedFile.State


@dataclass
class SyncResult:
    path: str
    action: (
        str  # unchanged | created | updated | appended | waiting | refused | error | gone | ignored
    )
    entries_added: int = 0
    bytes_read: int = 0
    message: str = ""
    session_pk: int | None = None


# --- walking the folders --------------------------------------------------------------


def session_files(root: str) -> Iterator[tuple[str, os.stat_result]]:
    """(path, stat) of every *.jsonl file under `root`, depth first, sorted per folder.
    Symbolic links are not followed (a folder cannot lead the follower elsewhere).
    Only the folders still to visit are kept in memory."""
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                items = sorted(listing, key=lambda item: item.name)
        except OSError as exc:
            log.warning("cannot list %s: %s", folder, exc.strerror or exc)
            continue
        subfolders = []
        for item in items:
            try:
                if item.is_symlink():
                    continue
                if item.is_dir(follow_symlinks=False):
                    subfolders.append(item.path)
                elif item.name.endswith(".jsonl") and item.is_file(follow_symlinks=False):
                    yield item.path, item.stat(follow_symlinks=False)
            except OSError as exc:
                log.warning("cannot read %s: %s", item.path, exc.strerror or exc)
        pending.extend(reversed(subfolders))


def _under(root: str) -> str:
    return root.rstrip(os.sep) + os.sep


# --- one file -------------------------------------------------------------------------


def _same_stat(state: FollowedFile, st: os.stat_result) -> bool:
    return (
        state.size == st.st_size
        and state.mtime_ns == st.st_mtime_ns
        and state.inode == st.st_ino
        and state.device == st.st_dev
    )


def is_unchanged(state: FollowedFile | None, st: os.stat_result) -> bool:
    """Nothing to read: the file is as it was at the last read (errors are retried)."""
    return (
        state is not None and state.state not in (State.ERROR, State.GONE) and _same_stat(state, st)
    )


def sync_file(
    path: str,
    owner,
    *,
    state: FollowedFile | None = None,
    st: os.stat_result | None = None,
    search: str = "inline",
) -> SyncResult:
    """Bring the session of one file up to date with the file. `state` and `st` may be
    passed when the caller already has them; `search` is "inline" or "worker" (where the
    search indexing of a whole-file import runs)."""
    try:
        st = st or os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return mark_gone(path)
    except OSError as exc:
        return _record_error(path, owner, state, exc)
    if not stat_module.S_ISREG(st.st_mode):
        return SyncResult(path, "ignored")
    if state is None:
        state = pi_file.followed_at(path)
    if state is not None and is_unchanged(state, st):
        return SyncResult(path, "unchanged", session_pk=state.session_id)
    try:
        with open(path, "rb") as fh:
            return _sync_open(path, fh, st, state, owner, search)
    except FileNotFoundError:
        return mark_gone(path)
    except OSError as exc:
        return _record_error(path, owner, state, exc)


def _sync_open(path, fh, st, state, owner, search) -> SyncResult:
    if state is None:
        state = _renamed_from(path, fh, st)
    if state is None or state.session_id is None:
        return _read_whole(path, fh, st, state, owner, search)
    rewritten = (
        st.st_ino != state.inode
        or st.st_dev != state.device
        or st.st_size < state.offset
        or marks_at(fh, state.offset) != (state.head_hash, state.tail_hash)
    )
    if rewritten or not state.appendable or state.state != State.FOLLOWING:
        return _read_whole(path, fh, st, state, owner, search)
    return _read_appended(path, fh, st, state, state.session_id, owner)


def _renamed_from(path: str, fh, st) -> FollowedFile | None:
    """The state of a known file this one is, moved here (same inode and first block,
    and its old path gone); None for a new file."""
    for candidate in pi_file.followed_with_inode(st.st_dev, st.st_ino):
        if candidate.path == path or os.path.lexists(candidate.path):
            continue  # still there: a hard link or a copy, not a rename
        if (
            st.st_size < candidate.offset
            or marks_at(fh, candidate.offset)[0] != candidate.head_hash
        ):
            continue  # the inode was reused by another file
        old = candidate.path
        with transaction.atomic():
            candidate.path = path
            candidate.gone_at = None
            if candidate.state == State.GONE:
                candidate.state = State.FOLLOWING if candidate.session_id else State.WAITING
            candidate.save()
            if candidate.session_id:
                Session.objects.filter(pk=candidate.session_id).update(source_path=path)
            _provenance_changed([candidate.session_id])
        log.info("%s: renamed from %s", path, old)
        return candidate
    return None


@contextmanager
def file_transaction():
    """One file's read: entries and read position, committed together (see above for
    why the commit does not wait for the disk). The sync API's pushes use it too."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                # (set_config(..., true) is SET LOCAL: both in one round trip)
                cursor.execute(
                    "SELECT set_config('synchronous_commit', 'off', true)"
                    + (
                        ", set_config('default_toast_compression', 'lz4', true)"
                        if _lz4_available(cursor)
                        else ""
                    )
                )
        yield


_LZ4: dict[str, bool] = {}


def _lz4_available(cursor) -> bool:
    """Whether this PostgreSQL server can compress with lz4 (built with it): asked once."""
    key = connection.settings_dict["NAME"]
    if key not in _LZ4:
        cursor.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        )
        row = cursor.fetchone()
        _LZ4[key] = bool(row and row[0])
    return _LZ4[key]


def _read_whole(path, fh, st, state, owner, search) -> SyncResult:
    """Import the file's complete lines (a new file, or a rewrite: idempotent)."""
    end = complete_length(fh, 0, st.st_size)
    if end == 0:
        _save(state, path, owner, st, state=State.WAITING, message="")
        return SyncResult(path, "waiting")
    reader = RangeReader(fh, 0, end)
    try:
        with file_transaction():
            report = importer.import_jsonl_stream(
                reader, owner, filename=path, after_commit="off", source_path=path
            )
            session = report.stored
            if session.source_path != path:
                Session.objects.filter(pk=session.pk).update(source_path=path)
            read_now = report.status != "unchanged" or state is None or state.session_id is None
            _save(
                state,
                path,
                owner,
                st,
                **_read_position(end, _lines_in(reader, fh, end), marks_at(fh, end)),
                message="",
                session_id=session.pk,
                appendable=report.migrated_from is None,
                **({"last_read_at": timezone.now()} if read_now else {}),
            )
    except importer.SessionImportError as exc:
        message = str(exc)
        previous = state.message if state is not None else None
        _save(state, path, owner, st, state=State.REFUSED, message=message)
        if message != previous:
            log.warning("%s: not followed: %s", path, message)
            _provenance_changed([state.session_id if state is not None else None])
        return SyncResult(path, "refused", message=message)
    _log_skipped(path, report)
    if report.entries_added:
        _after_import(report, search)
    if report.status == "created":
        log.info("%s: new session %s (%d entries)", path, session.pi_id, report.entries_added)
    return SyncResult(
        path,
        report.status if state is None or report.status != "unchanged" else "unchanged",
        entries_added=report.entries_added,
        bytes_read=end,
        session_pk=session.pk,
    )


def _lines_in(reader: RangeReader, fh, end: int) -> int:
    """The number of lines in [0, end): counted while importing, or here when the
    importer knew the file by its hash and did not read it to the end."""
    if reader.furthest == reader.end:
        return reader.newlines
    count = 0
    fh.seek(0)
    left = end
    while left > 0:
        data = fh.read(min(left, 1 << 20))
        if not data:
            break
        count += data.count(b"\n")
        left -= len(data)
    return count


def _read_appended(path, fh, st, state: FollowedFile, session_pk: int, owner) -> SyncResult:
    """Add the complete lines written after `state.offset`."""
    end = complete_length(fh, state.offset, st.st_size)
    if end == state.offset:
        # Only a line still being written: read it once its newline is there.
        FollowedFile.objects.filter(pk=state.pk).update(size=st.st_size, mtime_ns=st.st_mtime_ns)
        return SyncResult(path, "waiting", session_pk=state.session_id)
    reader = RangeReader(fh, state.offset, end)
    try:
        with file_transaction():
            locked = FollowedFile.objects.select_for_update().get(pk=state.pk)
            if (locked.offset, locked.path) != (state.offset, path):
                return SyncResult(path, "unchanged", session_pk=state.session_id)
            report = importer.append_lines(
                session_pk, owner, reader, lines_before=state.lines, filename=path
            )
            # (a file smaller than a block has a new first-block hash too)
            _save(
                locked,
                path,
                owner,
                st,
                **_read_position(end, state.lines + reader.newlines, marks_at(fh, end)),
                message="",
                last_read_at=timezone.now(),
            )
    except importer.SessionImportError as exc:
        return _record_error(path, owner, state, exc)
    _log_skipped(path, report)
    return SyncResult(
        path,
        "appended",
        entries_added=report.entries_added,
        bytes_read=end - state.offset,
        session_pk=state.session_id,
    )


def _log_skipped(path: str, report) -> None:
    for line_no, reason in report.skipped:
        log.warning("%s: line %d skipped: %s", path, line_no, reason)
    for warning in report.warnings:
        log.warning("%s: %s", path, warning)


def _after_import(report, search: str) -> None:
    """Search indexing (and tidying) after a whole-file import's commit."""
    importer.finish_imports(importer.search_work([report]), where=search)


def _stat_fields(st: os.stat_result) -> dict:
    """The FollowedFile fields that say which file, as it is now, a state is about."""
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "inode": st.st_ino,
        "device": st.st_dev,
        "gone_at": None,
    }


def _read_position(end: int, lines: int, marks) -> dict:
    """The FollowedFile fields of a file read up to `end` (the end of its last complete
    line): followed from there, with its line count and fingerprints at that point."""
    return {
        "state": State.FOLLOWING,
        "offset": end,
        "lines": lines,
        "head_hash": marks.head_hash,
        "tail_hash": marks.tail_hash,
    }


def _save(row: FollowedFile | None, path, owner, st, **fields) -> FollowedFile:
    values = {**_stat_fields(st), **fields}
    if row is None:
        row, _ = FollowedFile.objects.update_or_create(
            path=path, defaults={"owner": owner, **values}
        )
        return row
    for name, value in values.items():
        setattr(row, name, value)
    row.path = path
    row.save()
    return row


def _record_error(path, owner, state, exc) -> SyncResult:
    message = (
        f"{exc.strerror}" if isinstance(exc, OSError) and exc.strerror else str(exc)
    ) or exc.__class__.__name__
    if state is None:
        state = pi_file.followed_at(path)
    if state is None or state.message != message:
        log.warning("%s: %s", path, message)
    if state is None:
        FollowedFile.objects.update_or_create(
            path=path, defaults={"owner": owner, "state": State.ERROR, "message": message}
        )
    else:
        FollowedFile.objects.filter(pk=state.pk).update(state=State.ERROR, message=message)
        if state.message != message:
            _provenance_changed([state.session_id])
    return SyncResult(path, "error", message=message)


def _provenance_changed(session_pks) -> None:
    """Open pages of these sessions show the file's new state (the provenance line: gone,
    moved, not read), without waiting for an entry."""
    for session_pk in {pk for pk in session_pks if pk is not None}:
        events.publish(session_pk, "provenance_changed", {})


def mark_gone(path: str) -> SyncResult:
    """The file (or a folder of files) is no longer on disk; its sessions stay."""
    gone = FollowedFile.objects.filter(Q(path=path) | Q(path__startswith=_under(path))).exclude(
        state=State.GONE
    )
    sessions = list(gone.values_list("session_id", flat=True))
    count = gone.update(state=State.GONE, gone_at=timezone.now())
    if count:
        log.info("%s: gone from disk (%d file(s))", path, count)
        _provenance_changed(sessions)
    return SyncResult(path, "gone" if count else "ignored")


# --- whole folders --------------------------------------------------------------------


@dataclass
class ScanTotals:
    files: int = 0
    bytes: int = 0
    unchanged: int = 0
    changed: int = 0
    refused: int = 0
    errors: int = 0
    gone: int = 0
    entries_added: int = 0


class _Progress(Protocol):
    """A progress bar counting bytes (tqdm's)."""

    def update(self, n: float = 1) -> object: ...


@dataclass
class _Scan:
    """One scan's settings and running totals, and its read-ahead helper (or None)."""

    owner: object
    totals: ScanTotals
    progress: _Progress | None
    search: str
    helper: ReadAhead | None


def scan(roots: Iterable[str], owner, *, progress=None, search: str = "inline") -> ScanTotals:
    """Bring every file under `roots` up to date, and mark the files that went away.
    `progress` (a tqdm bar counting bytes) is advanced per file. Memory: one batch of
    paths and their states at a time, whatever the number of files."""
    roots = list(roots)
    with _read_ahead() as helper:
        run = _Scan(owner, ScanTotals(), progress, search, helper)
        for root in roots:
            batch: list[tuple[str, os.stat_result]] = []
            for item in session_files(root):
                batch.append(item)
                if len(batch) >= SCAN_BATCH:
                    _scan_batch(batch, run)
                    batch = []
            _scan_batch(batch, run)
    for root in roots:
        run.totals.gone += sweep_gone(root)
    return run.totals


def _read_ahead():
    """The scan's read-ahead helpers (`core.read_ahead`): processes preparing new files
    while this one writes, on the cores this process and the database server leave (one
    on two cores, two on more)."""
    cpus = len(os.sched_getaffinity(0))
    if settings.PIWEB_FOLLOW_READ_AHEAD == "off" or (
        settings.PIWEB_FOLLOW_READ_AHEAD == "auto" and cpus < 2
    ):
        return nullcontext(None)
    return ReadAhead(processes=min(2, max(1, cpus - 1)))


def _scan_batch(batch, run: _Scan) -> None:
    if not batch:
        return
    states = pi_file.followed_at_paths([p for p, _ in batch])
    new: list[tuple[str, os.stat_result]] = []  # files never seen: imported together
    new_bytes = 0
    for path, st in batch:
        run.totals.files += 1
        run.totals.bytes += st.st_size
        state = states.get(path)
        if is_unchanged(state, st):
            run.totals.unchanged += 1
            _advance(run, st.st_size)
        elif state is None and stat_module.S_ISREG(st.st_mode) and st.st_size > 0:
            new.append((path, st))
            new_bytes += st.st_size
            if len(new) >= RUN_FILES or new_bytes >= RUN_BYTES:
                _scan_new(new, run)
                new, new_bytes = [], 0
        else:
            _scan_new(new, run)  # (files in order)
            new, new_bytes = [], 0
            _scan_one(path, st, state, run)
    _scan_new(new, run)


def _advance(run: _Scan, size: int) -> None:
    if run.progress is not None:
        run.progress.update(size)


def _scan_one(path, st, state, run: _Scan) -> None:
    try:
        result = sync_file(path, run.owner, state=state, st=st, search=run.search)
    except Exception:  # one bad file must not stop the scan
        log.exception("%s: could not be read", path)
        run.totals.errors += 1
    else:
        _count(result, run.totals)
    _advance(run, st.st_size)


def _count(result: SyncResult, totals: ScanTotals) -> None:
    totals.entries_added += result.entries_added
    if result.action == "refused":
        totals.refused += 1
    elif result.action == "error":
        totals.errors += 1
    elif result.action == "unchanged":
        totals.unchanged += 1
    else:
        totals.changed += 1


# --- new files, many at a time (the first scan) ----------------------------------------
#
# Importing a file alone costs some thirty queries and a commit besides its rows: most of
# the time of a first scan of many small files. New files (no stored state) whose first
# line is a plain v3 header are imported together instead (`importer.NewSessionsBatch`):
# one transaction, one COPY, the per-session rows written once per run. The result is
# what importing them one by one gives. A file that cannot go with the others (a fork,
# a header id already stored or twice in the run, a possible rename, an unusual first
# line) is imported alone, in its turn; if anything fails in a run, nothing of it is
# committed and its files are imported one by one (which reports each file's problem).
# A run of at least READ_AHEAD_BYTES is prepared by the scan's read-ahead helper (when
# it has one) while this process writes the rows.

# New files imported in one transaction, and about this many bytes at most (a run is
# also within one SCAN_BATCH). Between two runs the read-ahead helpers wait; runs this
# big make the 1 GB benchmark a tenth faster than runs of 200 files / 64 MB.
RUN_FILES = 500
RUN_BYTES = 256 << 20
HEAD_BYTES = 1 << 16  # a header line longer than this: the file is imported alone
READ_AHEAD_BYTES = 4 << 20  # smaller runs are prepared here (the helpers would only wait)


def _scan_new(files, run: _Scan) -> None:
    together: list[tuple[str, os.stat_result, importer.NewSessionFile]] = []
    for path, st in files:
        header = _plain_header(path, st)
        if header is None:
            _import_together(together, run)
            together = []
            _scan_one(path, st, None, run)
        else:
            together.append((path, st, importer.NewSessionFile(*header, path, path)))
    _import_together(together, run)


def _plain_header(path: str, st: os.stat_result) -> tuple[dict, str] | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(min(st.st_size, HEAD_BYTES))
    except OSError:
        return None  # reported by the import alone
    newline = head.find(b"\n")
    return importer.batchable_header(head[: newline + 1]) if newline >= 0 else None


def _import_together(files, run: _Scan) -> None:
    if len(files) < 2:  # nothing to share
        for path, st, _new in files:
            _scan_one(path, st, None, run)
        return
    taken = stored_pi_ids([new.header["id"] for _, _, new in files])
    known_inodes = pi_file.known_inodes({st.st_ino for _, st, _ in files})
    together, alone = [], []
    for item in files:
        _path, st, new = item
        if new.header["id"] in taken or (st.st_dev, st.st_ino) in known_inodes:
            alone.append(item)  # an update of a stored session, or maybe a rename
        else:
            taken.add(new.header["id"])
            together.append(item)
    helper = run.helper if sum(st.st_size for _, st, _ in together) >= READ_AHEAD_BYTES else None
    advanced = 0  # the progress bar moves per file; a failed run takes it back

    def file_read(size: int) -> None:
        nonlocal advanced
        advanced += size
        _advance(run, size)

    try:
        reports = _read_together(together, run.owner, helper, file_read) if together else []
    except Exception as exc:  # each file alone says what is wrong
        log.info("%d new files imported one by one (%s)", len(together), exc)
        _advance(run, -advanced)
        together, reports, alone = [], [], files
    for (path, _st, _new), report in zip(together, reports, strict=True):
        _log_skipped(path, report)
        log.info("%s: new session %s (%d entries)", path, report.stored.pi_id, report.entries_added)
        _count(SyncResult(path, "created", entries_added=report.entries_added), run.totals)
    importer.finish_imports(importer.search_work(reports), where=run.search)
    for path, st, _new in alone:
        _scan_one(path, st, None, run)


@contextmanager
def _no_cycle_collection():
    """Python's cycle collector off for one run: parsing allocates a container per JSON
    object, and the collector's passes over them cost a sixth of the run's time. Lines
    make no cycles (their memory goes by reference counting); any other cycles are
    collected once it is on again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _read_together(
    files, owner, helper: ReadAhead | None, file_read
) -> list[importer.ImportReport]:
    """Import new files in one transaction, with their FollowedFile rows; `helper` (when
    there is one) prepares the files while this process writes. `file_read(size)` is
    called as each file has been read."""
    rows = []
    run = [(path, st.st_size) for path, st, _new in files]
    with _no_cycle_collection(), deferred_wal_checkpoint(), file_transaction():
        with importer.NewSessionsBatch(owner, [new for _, _, new in files]) as batch:
            for (path, st, _new), prepared in zip(files, prepared_files(run, helper), strict=True):
                report, digest = batch.add(prepared)
                file_read(st.st_size)
                rows.append(
                    FollowedFile(
                        path=path,
                        owner=owner,
                        session=report.session,
                        **_read_position(digest.end, digest.lines, digest.marks),
                        last_read_at=timezone.now(),
                        **_stat_fields(st),
                    )
                )
            reports = batch.finish()
        FollowedFile.objects.bulk_create(rows)
    return reports


def sweep_gone(root: str) -> int:
    """Mark followed files under `root` that are no longer there; returns how many."""
    count = 0
    last = 0
    while True:
        page = pi_file.followed_page_under(_under(root), last, SCAN_BATCH)
        if not page:
            return count
        for _pk, path in page:
            if not os.path.lexists(path):
                count += 1 if mark_gone(path).action == "gone" else 0
        last = page[-1][0]


def folder_totals(roots: Iterable[str]) -> tuple[int, int]:
    """(files, bytes) under `roots`: the first scan's progress bar total."""
    files = size = 0
    for root in roots:
        for _path, st in session_files(root):
            files += 1
            size += st.st_size
    return files, size
