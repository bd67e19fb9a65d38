"""Write back to pi's file: what piweb adds to a followed session is appended to the very
file pi writes, the way pi writes it, so `pi --session FILE` continues at piweb's leaf.

What is written: every entry piweb added (messages, tool results, branch summaries,
labels, compactions, model changes, workspace choices), each as its stored line, which is
already `JSON.stringify`'s form, with pi's id and timestamp rules (8 hex digits, ISO
times), in the order they were added. pi takes a file's last entry as its leaf, so when
asked for (`leaf_marker=True`: "Write back now" after navigating) and piweb's leaf is not
the last line, a ``custom`` entry of type ``piweb.leaf`` (no context in pi) is added at
the leaf first.

Per session (``Session.settings["pi_file"]``): ``write_back`` (on by default on a
single-user setup, `PIWEB_WRITE_BACK_DEFAULT`), ``pending`` (the ids piweb added and has
not written yet; absent until the first write-back, which finds them by comparing the
file with the session), ``due`` (a write-back waits for pi to be quiet) and ``mtime_ns``
(the file's time after piweb's own last write: that change is not pi writing).

How it stays safe beside pi, which takes no lock on session files (pi 0.80.2 and 1.6.0
append each entry with one `appendFileSync`, i.e. one O_APPEND write of a whole line):

- first the follower reads what pi has added (`following.sync_file`), so nothing of pi's
  is overlooked and a whole-file rewrite is detected (inode, size, fingerprints);
- under the FollowedFile row lock, the file must be exactly as read (size = the read
  position, same inode and fingerprints, ending with a newline), else it is read again;
- while pi is appending (the file changed less than `PIWEB_PI_QUIET_SECONDS` ago, by
  someone other than piweb) the write waits (`PiWriting`; the follower retries it);
- piweb's lines go out in one O_APPEND write, so they are never interleaved with a line
  of pi's; where the write landed tells whether pi appended in between, and those lines
  of pi's are imported right away;
- the read position moves past piweb's lines in the same transaction, so the follower
  never imports them again.
"""

from __future__ import annotations

import json
import logging
import os
import stat as stat_module
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from sessions_app.core.errors import ServiceError
from sessions_app.core.file_marks import RangeReader, complete_length, marks_at
from sessions_app.models import FollowedFile, Session
from sessions_app.selectors.entries import last_added, lines_in_order, pi_ids_in_order
from sessions_app.selectors.pi_file import (
    due_sessions,
    file_state,
    followed_file,
    write_back_enabled,
)
from sessions_app.selectors.sessions import session_by_pk
from sessions_app.services import events, following, importer, sessions

log = logging.getLogger("piweb.follow")

LEAF_MARKER_TYPE = "piweb.leaf"
ATTEMPTS = 5

# An injection point for tests: when set, called with the file's path in the instant
# between the checks under the locks and piweb's append (where pi's own line may land;
# tests/service/test_write_back.py makes it land there). None in the app.
before_append: Callable[[str], None] | None = None


class WriteBackError(ServiceError):
    """A write-back that cannot happen now, with the message to show."""

    code = "write_back"


class PiWriting(WriteBackError):
    status = 409
    code = "pi_writing"


@dataclass
class Result:
    action: str  # written | nothing | on | off | queued | not_followed
    lines: int = 0
    path: str = ""


# --- the entry-written event ------------------------------------------------------------


def note_appended(session: Session, pi_id: str) -> bool:
    """An entry piweb added to `session` (whose row the caller has locked): noted as
    pending when the file's missing entries are already known; True when it is to be
    written back (the session writes back, and the write-back itself did not add it).
    The write-back job's subscriber calls this (`jobs/write_back.py`)."""
    if not session.source_path:
        return False
    state = file_state(session)
    if not state.get("write_back", settings.PIWEB_WRITE_BACK_DEFAULT):
        return False
    if "pending" in state:
        state["pending"] = [*state["pending"], pi_id]
        _savefile_state(session, state)
    return not state.get("quiet_hook")


def write_back_quietly(session_pk: int, *, leaf_marker: bool = False, actor=None) -> None:
    """A write-back in the worker (the write-back job runs it): waiting for pi or failing
    only marks it due (the follower tries again), never fails the change that caused it."""
    try:
        write_back(session_by_pk(session_pk), leaf_marker=leaf_marker, actor=actor)
    except WriteBackError as exc:
        _mark_due(session_pk, str(exc))
    except Exception:
        log.exception("write-back of session %s failed", session_pk)
        _mark_due(session_pk, "The write-back failed; it will be tried again.")


def _mark_due(session_pk: int, message: str) -> None:
    with transaction.atomic():
        locked = sessions.lock_session(session_pk)
        state = file_state(locked)
        if state.get("due") and state.get("message") == message:
            return
        state.update(due=True, message=message)
        _savefile_state(locked, state)


def _clear_due(session_pk: int) -> None:
    with transaction.atomic():
        locked = sessions.lock_session(session_pk)
        state = file_state(locked)
        state.pop("due", None)
        state.pop("message", None)
        _savefile_state(locked, state)


def _savefile_state(session: Session, state: dict) -> None:
    settings_ = {**(session.settings or {}), "pi_file": state}
    Session.objects.filter(pk=session.pk).update(settings=settings_)
    session.settings = settings_


# --- state changes ----------------------------------------------------------------------


def set_enabled(session: Session, on: bool, *, actor=None) -> Result:
    """Turn write-back on or off for this session (`jobs.write_back.set_enabled` also
    queues the write of what is missing when it is turned on)."""
    followed = followed_file(session)
    if followed is None:
        raise WriteBackError("This session is not followed from a pi file: there is none to write.")
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        state = file_state(locked)
        state["write_back"] = on
        state.pop("pending", None)  # found again from the file when it is turned on
        state.pop("due", None)
        _savefile_state(locked, state)
        sessions.record_activity(locked, actor, "write_back_on" if on else "write_back_off")
    session.refresh_from_db()
    return Result("on" if on else "off", path=followed.path)


def flush_due() -> int:
    """Write back the sessions whose write-back waited (the follower calls this)."""
    done = 0
    for pk in due_sessions():
        try:
            result = write_back(session_by_pk(pk))
            if result.action in ("off", "not_followed"):
                _clear_due(pk)  # nothing to wait for any more
            else:
                done += 1
        except PiWriting:
            continue
        except WriteBackError as exc:
            _mark_due(pk, str(exc))
    return done


def write_back(session: Session, *, leaf_marker: bool = False, actor=None) -> Result:
    """Append to pi's file what piweb added and the file lacks (see the module doc).
    Raises PiWriting while pi appends, WriteBackError when it cannot be done."""
    row = followed_file(session)
    if row is None:
        return Result("not_followed")
    if not write_back_enabled(session):
        return Result("off", path=row.path)
    for _attempt in range(ATTEMPTS):
        following.sync_file(row.path, row.owner)  # pi's new lines first
        outcome = _write_locked(session.pk, row.pk, leaf_marker, actor)
        if outcome is not None:
            if outcome.lines:
                events.publish(session.pk, "provenance_changed", {})
            return outcome
        time.sleep(0.05)
    raise PiWriting("pi keeps writing this session's file; piweb will write back once it is quiet.")


def _write_locked(session_pk, row_pk, leaf_marker, actor) -> Result | None:
    """One try under the locks; None when the file moved on since it was read."""
    with transaction.atomic():
        row = FollowedFile.objects.select_for_update().get(pk=row_pk)
        session = sessions.lock_session(session_pk)
        if row.state != FollowedFile.State.FOLLOWING or not row.appendable:
            raise WriteBackError(
                f"{row.path} cannot be written back now ({row.get_state_display().lower()}"
                f"{': ' + row.message if row.message else ''})."
            )
        try:
            fd = os.open(row.path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise WriteBackError(f"{row.path} cannot be opened: {exc.strerror}") from None
        with os.fdopen(fd, "r+b", buffering=0) as fh:
            st = os.fstat(fd)
            if not stat_module.S_ISREG(st.st_mode):
                raise WriteBackError(f"{row.path} is not a regular file.")
            if (
                (st.st_dev, st.st_ino) != (row.device, row.inode)
                or st.st_size != row.offset
                or marks_at(fh, row.offset) != (row.head_hash, row.tail_hash)
            ):
                return None  # pi wrote (or rewrote) since the follower read it
            state = file_state(session)
            age = time.time() - st.st_mtime_ns / 1e9
            if st.st_mtime_ns != state.get("mtime_ns") and age < settings.PIWEB_PI_QUIET_SECONDS:
                raise PiWriting(
                    "pi is writing this session right now; piweb will write back once it has "
                    f"been quiet for {settings.PIWEB_PI_QUIET_SECONDS:g} seconds."
                )
            pending = state.get("pending")
            if pending is None:
                pending = _missing_from_file(session, fh, row.offset)
            if leaf_marker:
                marker = _leaf_marker_needed(session, pending, fh, row.offset)
                if marker:
                    state["quiet_hook"] = True
                    _savefile_state(session, state)
                    entry = sessions.append_entry(
                        session,
                        {"type": "custom", "customType": LEAF_MARKER_TYPE, "data": {}},
                        actor=actor,
                    )
                    pending = [*pending, entry.pi_id]
                    session = sessions.lock_session(session_pk)
                    state = file_state(session)
                    state.pop("quiet_hook", None)
            lines = lines_in_order(session, pending)
            data = "".join(line + "\n" for line in lines).encode("utf-8")
            end, theirs = row.offset, 0
            if data:
                if before_append is not None:
                    before_append(row.path)
                end = _append(fd, data)
                start = end - len(data)
                if start != row.offset:
                    theirs = _import_between(session, row, fh, row.offset, start)
            after = os.fstat(fd)
            row.refresh_from_db()
            row.offset = end
            row.lines += theirs + len(lines)
            row.head_hash, row.tail_hash = marks_at(fh, end)
            row.size = end
            row.mtime_ns = after.st_mtime_ns
            row.last_read_at = timezone.now()
            row.save()
            state.update(pending=[], mtime_ns=after.st_mtime_ns, written_at=sessions.now_iso())
            state.pop("due", None)
            state.pop("message", None)
            _savefile_state(session, state)
            if lines:
                sessions.record_activity(
                    session, actor, "written_back", lines=len(lines), path=row.path
                )
        return Result("written" if lines else "nothing", len(lines), row.path)


def _append(fd: int, data: bytes) -> int:
    """One O_APPEND write of whole lines; the file position just past them."""
    written = os.write(fd, data)
    while written < len(data):  # (only on a full disk or a signal)
        written += os.write(fd, data[written:])
    return os.lseek(fd, 0, os.SEEK_CUR)


def _import_between(session: Session, row: FollowedFile, fh, start: int, end: int) -> int:
    """pi appended lines between the check and piweb's write: import them now; how many."""
    complete = complete_length(fh, start, end)
    reader = RangeReader(fh, start, complete)
    importer.append_lines(session.pk, row.owner, reader, lines_before=row.lines, filename=row.path)
    log.info("%s: pi appended %d line(s) during a write-back", row.path, reader.newlines)
    return reader.newlines


def _file_ids(fh, end: int) -> list[str]:
    fh.seek(0)
    ids = []
    for raw in fh.read(end).splitlines():
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        if isinstance(item, dict) and item.get("type") != "session" and "id" in item:
            ids.append(item["id"])
    return ids


def _missing_from_file(session: Session, fh, end: int) -> list[str]:
    """The ids of the session's entries the file lacks, in the order they were added."""
    in_file = set(_file_ids(fh, end))
    return [pi_id for pi_id in pi_ids_in_order(session) if pi_id not in in_file]


def _leaf_marker_needed(session: Session, pending: list[str], fh, end: int) -> bool:
    """Whether pi would take another entry than piweb's leaf as its leaf."""
    leaf = session.leaf_pi_id
    if leaf is None:
        return False
    if pending:
        return last_added(session, pending) != leaf
    ids = _file_ids(fh, end)
    return not ids or ids[-1] != leaf
