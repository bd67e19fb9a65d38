"""Write back to pi's file (services/write_back.py): what piweb adds to a followed
session is appended to the file as pi writes it, pi's own lines are read first and never
lost, the follower does not import piweb's lines again, and while pi writes it waits."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from sessions_app.models import Entry, FollowedFile, Session
from sessions_app.selectors.exporter import export_bytes
from sessions_app.selectors.pi_file import pi_writing_since
from sessions_app.services import chat, following, sessions, write_back
from sessions_app.services.jobs import write_back as write_back_job
from tests.support.pi_files import FOLLOWED_SID as SID
from tests.support.pi_files import (
    append,
    chain_lines,
    line,
    message,
    run_write_backs,
    session_file,
)

pytestmark = [
    pytest.mark.embedded,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("redis_ready", "tasks_stay_in_process"),
]


@pytest.fixture
def owner(make_user):
    return make_user()


@pytest.fixture(autouse=True)
def quiet(settings):
    settings.PIWEB_WRITE_BACK_DEFAULT = True
    settings.PIWEB_PI_QUIET_SECONDS = 0.0


def followed(tmp_path, owner, count=2) -> tuple[str, Session]:
    path = session_file(tmp_path, count)
    assert following.sync_file(str(path), owner).action == "created"
    return str(path), Session.objects.get(pi_id=SID)


def file_entries(path) -> list[dict]:
    with open(path, "rb") as fh:
        return [json.loads(raw) for raw in fh.read().splitlines()][1:]


def db_ids(session) -> list[str]:
    return list(
        Entry.objects.filter(session=session).order_by("seq").values_list("pi_id", flat=True)
    )


def test_what_piweb_adds_goes_to_the_file_exactly_as_stored(tmp_path, owner):
    path, session = followed(tmp_path, owner)
    entry = sessions.append_entry(
        session,
        {"type": "message", "message": {"role": "user", "content": [{"type": "text",
         "text": "from the browser ✓"}], "timestamp": 5}},
    )  # fmt: skip
    sessions.label_entry(session, "00000000", "start")
    assert len(file_entries(path)) == 2  # the write-back is a job, not the append's
    assert run_write_backs() == 1  # one queued job writes both
    last = file_entries(path)[-2:]
    assert [e["id"] for e in last] == [
        entry.pi_id,
        Entry.objects.get(session=session, type="label").pi_id,
    ]
    raw = open(path, "rb").read().splitlines()
    assert raw[-2].decode() == Entry.objects.get(pk=entry.pk).line  # JSON.stringify's form
    assert len(entry.pi_id) == 8 and int(entry.pi_id, 16) >= 0
    assert last[0]["timestamp"].endswith("Z") and "T" in last[0]["timestamp"]
    # The follower does not import piweb's lines again; the file is the session.
    assert following.sync_file(path, owner).action == "unchanged"
    session.refresh_from_db()
    assert export_bytes(session) == open(path, "rb").read()


def test_pis_lines_are_read_first_and_both_sides_end_equal(tmp_path, owner):
    path, session = followed(tmp_path, owner)
    append(path, chain_lines(1, start=2)[0])  # pi wrote; the follower has not read it yet
    sessions.append_entry(session, {"type": "session_info", "name": "renamed in piweb"})
    run_write_backs()
    # pi's line was imported before piweb's went out: the file has it first.
    ids = [e["id"] for e in file_entries(path)]
    assert ids[:3] == ["00000000", "00000001", "00000002"] and len(ids) == 4
    assert sorted(db_ids(session)) == sorted(ids)
    session.refresh_from_db()
    assert session.name == "renamed in piweb"


def test_a_half_written_line_of_pi_is_never_glued_to(tmp_path, owner):
    path, session = followed(tmp_path, owner)
    whole = chain_lines(1, start=2)[0]
    append(path, whole[:20])
    with pytest.raises(write_back.PiWriting):
        _write_now(session)
    assert open(path, "rb").read().endswith(whole[:20])  # nothing glued to the half line
    append(path, whole[20:])
    session.refresh_from_db()
    write_back.write_back(session)
    assert sorted(db_ids(session)) == sorted(e["id"] for e in file_entries(path))


def _write_now(session):
    """Add one entry without the automatic write-back, then write back (may raise)."""
    state = dict(session.settings.get("pi_file") or {})
    Session.objects.filter(pk=session.pk).update(
        settings={**session.settings, "pi_file": {**state, "quiet_hook": True}}
    )
    session.refresh_from_db()
    sessions.append_entry(session, {"type": "session_info", "name": f"n{time.monotonic()}"})
    session.refresh_from_db()
    state = dict(session.settings["pi_file"])
    state.pop("quiet_hook", None)
    Session.objects.filter(pk=session.pk).update(settings={**session.settings, "pi_file": state})
    session.refresh_from_db()
    return write_back.write_back(session)


def test_while_pi_writes_piweb_waits_and_the_chat_offers_a_fork(tmp_path, owner, settings):
    path, session = followed(tmp_path, owner)
    settings.PIWEB_PI_QUIET_SECONDS = 30.0
    append(path, chain_lines(1, start=2)[0])
    following.sync_file(path, owner)
    assert pi_writing_since(session) is not None
    with pytest.raises(chat.ChatError, match="pi is writing this session") as refused:
        chat.send_message(session, owner, "hello")
    assert refused.value.code == "pi_writing"
    # An entry added meanwhile (a label, say) waits: the write-back is due.
    sessions.label_entry(session, "00000000", "later")
    run_write_backs()
    session.refresh_from_db()
    assert session.settings["pi_file"]["due"] is True
    assert "label" not in open(path).read()
    settings.PIWEB_PI_QUIET_SECONDS = 0.0
    assert write_back.flush_due() == 1
    assert db_ids(session) == [e["id"] for e in file_entries(path)]
    session.refresh_from_db()
    assert "due" not in session.settings["pi_file"]
    # piweb's own write is not pi writing.
    settings.PIWEB_PI_QUIET_SECONDS = 30.0
    assert pi_writing_since(session) is None


def test_a_rewrite_by_pi_is_read_again_before_writing(tmp_path, owner):
    path, session = followed(tmp_path, owner)
    data = open(path, "rb").read()
    os.unlink(path)
    with open(path, "wb") as fh:  # another inode, same content plus a line
        fh.write(data + chain_lines(1, start=2)[0])
    sessions.append_entry(session, {"type": "session_info", "name": "after the rewrite"})
    run_write_backs()
    assert sorted(db_ids(session)) == sorted(e["id"] for e in file_entries(path))
    assert len(file_entries(path)) == 4
    assert following.sync_file(path, owner).action == "unchanged"


def test_the_leaf_marker_puts_piwebs_leaf_last(tmp_path, owner):
    path, session = followed(tmp_path, owner, count=4)
    sessions.set_leaf(session, "00000001")
    result = write_back.write_back(session, leaf_marker=True)
    assert result.lines == 1
    last = file_entries(path)[-1]
    assert last["customType"] == "piweb.leaf" and last["parentId"] == "00000001"
    session.refresh_from_db()
    assert session.leaf_pi_id == last["id"]
    assert write_back.write_back(session, leaf_marker=True).action == "nothing"


def test_off_writes_nothing_and_on_writes_what_is_missing(tmp_path, owner):
    path, session = followed(tmp_path, owner)
    write_back.set_enabled(session, False)
    session.refresh_from_db()
    sessions.append_entry(session, {"type": "session_info", "name": "kept here"})
    assert run_write_backs() == 0  # off: no job was queued
    assert len(file_entries(path)) == 2
    session.refresh_from_db()
    assert write_back_job.set_enabled(session, True).action == "on"
    assert len(file_entries(path)) == 2  # the worker writes it: the job
    assert run_write_backs() == 1
    assert db_ids(session) == [e["id"] for e in file_entries(path)]


def test_pi_appends_while_piweb_writes_back_hundreds_of_times(tmp_path, owner):
    """A pi-like appender (one O_APPEND write per whole line, as appendFileSync does)
    races piweb's write-backs: no line lost, broken or duplicated, and both sides end
    with the same entries."""
    path, session = followed(tmp_path, owner)
    rounds = 300
    stop = threading.Event()
    pi_ids: list[str] = []

    def pi():
        n = 0
        while not stop.is_set() and n < rounds:
            eid = f"{0xA0000000 + n:08x}"
            data = line(message(eid, "00000001", "user", f"pi {n}", ts=n))
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            pi_ids.append(eid)
            n += 1
            time.sleep(0.0005)

    appender = threading.Thread(target=pi)
    appender.start()
    written = 0
    try:
        while appender.is_alive() or written < rounds:
            session.refresh_from_db()
            sessions.append_entry(
                session,
                {"type": "session_info", "name": f"piweb {written}"},
                parent_pi_id="00000000",
            )
            written += 1
            run_write_backs()  # the worker runs beside them
            following.sync_file(path, owner)  # and the follower
    finally:
        stop.set()
        appender.join()
    session.refresh_from_db()
    write_back.write_back(session)
    following.sync_file(path, owner)
    raw = open(path, "rb").read()
    assert raw.endswith(b"\n")
    entries = file_entries(path)  # every line parses: none broken
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids))  # none duplicated
    assert set(pi_ids) <= set(ids) and len(pi_ids) == rounds  # none of pi's lost
    stored = db_ids(session)
    assert sorted(stored) == sorted(ids)  # both sides hold the same entries
    assert len(stored) == 2 + rounds + written
    state = FollowedFile.objects.get(path=path)
    assert state.offset == len(raw) and state.lines == len(raw.splitlines())


def test_a_line_pi_appends_between_the_check_and_the_write_is_imported(
    tmp_path, owner, monkeypatch
):
    """pi's line lands in the instant between piweb's check and its write (the race made
    certain): it is imported at once, and the follower then finds nothing to read."""
    path, session = followed(tmp_path, owner)
    pi_line = chain_lines(1, start=2)[0]
    monkeypatch.setattr(write_back, "before_append", lambda file: append(file, pi_line))
    entry = sessions.append_entry(session, {"type": "session_info", "name": "raced"})
    run_write_backs()
    ids = [e["id"] for e in file_entries(path)]
    assert ids == ["00000000", "00000001", "00000002", entry.pi_id]
    assert sorted(db_ids(session)) == sorted(ids)
    assert following.sync_file(path, owner).action == "unchanged"
    state = FollowedFile.objects.get(path=path)
    assert state.offset == os.path.getsize(path) and state.lines == 5


def test_a_due_write_back_is_dropped_when_write_back_is_turned_off(tmp_path, owner, settings):
    path, session = followed(tmp_path, owner)
    write_back._mark_due(session.pk, "waiting for pi")
    session.refresh_from_db()
    state = {**session.settings["pi_file"], "write_back": False}
    Session.objects.filter(pk=session.pk).update(settings={**session.settings, "pi_file": state})
    assert write_back.flush_due() == 0
    session.refresh_from_db()
    assert "due" not in session.settings["pi_file"]


def _changed_between_read_and_write(tmp_path, owner, change) -> tuple[str, bytes, object]:
    """piweb has a line to write; the follower reads the file (the check), then `change`
    alters it, then the write under the lock runs (the window made certain by running the
    two halves of `write_back` in turn). Returns the path, the file as `change` left it
    and what the locked write answered."""
    path, session = followed(tmp_path, owner)
    write_back.set_enabled(session, False)
    sessions.append_entry(session, {"type": "session_info", "name": "to write"})
    row = FollowedFile.objects.get(path=path)
    following.sync_file(path, owner)  # the check: the follower's read
    change(path)
    left = open(path, "rb").read()
    return path, left, write_back._write_locked(session.pk, row.pk, False, None)


def test_a_same_size_rewrite_between_the_check_and_the_write_stops_the_write(tmp_path, owner):
    def rewrite_in_place(path):
        data = open(path, "rb").read()
        changed = data[:-12] + data[-12:].replace(b"stop", b"halt")  # last line, same length
        assert len(changed) == len(data) and changed != data
        with open(path, "r+b") as fh:  # the same inode, the same size
            fh.write(changed)

    path, left, outcome = _changed_between_read_and_write(tmp_path, owner, rewrite_in_place)
    assert outcome is None  # read again first: nothing written after lines it never read
    assert open(path, "rb").read() == left


def test_an_inode_swap_between_the_check_and_the_write_stops_the_write(tmp_path, owner):
    def swap(path):
        data = open(path, "rb").read()
        with open(f"{path}.new", "wb") as fh:  # the same bytes in another file
            fh.write(data)
        os.replace(f"{path}.new", path)

    path, left, outcome = _changed_between_read_and_write(tmp_path, owner, swap)
    assert outcome is None
    assert open(path, "rb").read() == left
