"""The follower's services on real files (services/following.py, importer.append_lines):
what happens to a session when its file appears, grows, is rewritten, renamed or deleted.
The watcher process itself is tested in tests/e2e/test_follow_watcher.py."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from tqdm import tqdm

from sessions_app.core.jsonl import serialize_entry
from sessions_app.models import Activity, Entry, FollowedFile, SearchDocument, Session, UsageDaily
from sessions_app.selectors import search
from sessions_app.selectors.exporter import export_bytes
from sessions_app.services import following
from tests.conftest import REPO
from tests.support.pi_files import FOLLOWED_SID as SID
from tests.support.pi_files import append, chain_lines, header, line, message, session_file

pytestmark = [pytest.mark.embedded, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner(make_user):
    return make_user("follower")


def entry_ids(session) -> list[str]:
    return list(
        Entry.objects.filter(session=session).order_by("seq").values_list("pi_id", flat=True)
    )


def test_new_file_then_appends_then_nothing(tmp_path, owner):
    path = session_file(tmp_path, 2)
    result = following.sync_file(str(path), owner)
    assert result.action == "created" and result.entries_added == 2
    session = Session.objects.get(pi_id=SID)
    assert session.source_path == str(path)
    state = FollowedFile.objects.get(path=str(path))
    assert (state.state, state.offset, state.lines) == ("following", path.stat().st_size, 3)
    assert state.last_read_at is not None

    append(path, b"".join(chain_lines(3, start=2)))
    result = following.sync_file(str(path), owner)
    assert (result.action, result.entries_added) == ("appended", 3)
    assert entry_ids(session) == [f"{n:08x}" for n in range(5)]
    session.refresh_from_db()
    assert session.entry_count == 5 and session.leaf.pi_id == f"{4:08x}"
    assert Entry.objects.get(session=session, pi_id=f"{3:08x}").parent.pi_id == f"{2:08x}"
    # search finds the appended text (indexed in the append's transaction)
    hits = search.search(owner, '"number 4"').hits
    assert [h.entry_pi_id for h in hits] == [f"{4:08x}"]

    # every later append is read as one (never mistaken for a rewrite)
    for n in range(5, 8):
        append(path, chain_lines(1, start=n)[0])
        assert following.sync_file(str(path), owner).action == "appended"
    assert following.sync_file(str(path), owner).action == "unchanged"
    session.refresh_from_db()  # the export ends with the session's leaf, as now stored
    assert session.leaf.pi_id == f"{7:08x}"
    assert export_bytes(session) == path.read_bytes()


def test_a_line_split_across_two_writes_is_read_once_complete(tmp_path, owner, caplog):
    path = session_file(tmp_path, 1)
    following.sync_file(str(path), owner)
    whole = chain_lines(1, start=1)[0]
    append(path, whole[:25])
    with caplog.at_level(logging.WARNING, logger="piweb.follow"):
        assert following.sync_file(str(path), owner).action == "waiting"
        state = FollowedFile.objects.get(path=str(path))
        assert state.offset == path.stat().st_size - 25 and state.lines == 2
        append(path, whole[25:])
        result = following.sync_file(str(path), owner)
    assert (result.action, result.entries_added) == ("appended", 1)
    # the half line was never parsed (nor reported) as bad
    assert not [r for r in caplog.records if r.name == "piweb.follow" and r.levelname == "WARNING"]
    assert entry_ids(Session.objects.get(pi_id=SID)) == ["00000000", "00000001"]


def test_a_new_file_with_a_half_written_last_line(tmp_path, owner):
    path = session_file(tmp_path, 2)
    append(path, chain_lines(1, start=2)[0][:-10])
    assert following.sync_file(str(path), owner).entries_added == 2
    append(path, chain_lines(1, start=2)[0][-10:])
    assert following.sync_file(str(path), owner).entries_added == 1
    assert len(entry_ids(Session.objects.get(pi_id=SID))) == 3


def test_header_only_file_is_an_empty_session_that_then_grows(tmp_path, owner):
    path = tmp_path / f"x_{SID}.jsonl"
    path.write_bytes(line(header(SID)))
    assert following.sync_file(str(path), owner).action == "created"
    session = Session.objects.get(pi_id=SID)
    assert session.entry_count == 0 and session.leaf_id is None
    append(path, b"".join(chain_lines(2)))
    assert following.sync_file(str(path), owner).entries_added == 2


def test_a_rewrite_by_pi_migration_is_applied_once(tmp_path, owner):
    """pi migrates a v2 file by rewriting it as v3 (role hookMessage -> custom)."""
    path = tmp_path / f"x_{SID}.jsonl"
    hook = {
        "type": "message",
        "id": "0000000a",
        "parentId": "00000001",
        "timestamp": "2026-01-01T00:01:00.000Z",
        "message": {
            "role": "hookMessage",
            "customType": "note",
            "content": "hi",
            "display": True,
            "timestamp": 5,
        },
    }
    v2 = line(header(SID, version=2)) + b"".join(chain_lines(2)) + line(hook)
    path.write_bytes(v2)
    assert following.sync_file(str(path), owner).entries_added == 3
    migrated = dict(hook, message=dict(hook["message"], role="custom"))
    rewritten = tmp_path / "rewrite.tmp"
    rewritten.write_bytes(line(header(SID)) + b"".join(chain_lines(2)) + line(migrated))
    os.replace(rewritten, path)  # a new inode, as pi's rewrite
    for _ in range(2):
        result = following.sync_file(str(path), owner)
        assert result.entries_added == 0 and result.action == "unchanged"
    session = Session.objects.get(pi_id=SID)
    assert session.entry_count == 3
    state = FollowedFile.objects.get(path=str(path))
    assert state.appendable and state.inode == path.stat().st_ino
    append(
        path, chain_lines(1, start=2)[0].replace(b'"parentId":"00000001"', b'"parentId":"0000000a"')
    )
    assert following.sync_file(str(path), owner).action == "appended"
    assert Entry.objects.get(session=session, pi_id="00000002").parent.pi_id == "0000000a"


def test_a_rewrite_in_place_with_more_lines(tmp_path, owner):
    path = session_file(tmp_path, 3)
    following.sync_file(str(path), owner)
    data = path.read_bytes()
    # same inode, the head changed (a different cwd in the header is another session)
    path.write_bytes(data.replace(b'"text number 0"', b'"text number X"'))
    result = following.sync_file(str(path), owner)
    assert result.action == "refused" and "differs from the stored session" in result.message
    session = Session.objects.get(pi_id=SID)
    assert session.entry_count == 3  # nothing lost, nothing doubled
    path.write_bytes(data + b"".join(chain_lines(1, start=3)))
    assert following.sync_file(str(path), owner).entries_added == 1


def test_deleted_then_renamed_back(tmp_path, owner):
    path = session_file(tmp_path, 2)
    following.sync_file(str(path), owner)
    moved = path.with_name("renamed.jsonl")
    os.rename(path, moved)
    assert following.sync_file(str(path), owner).action == "gone"
    session = Session.objects.get(pi_id=SID)
    assert FollowedFile.objects.get(path=str(path)).state == "gone"
    assert session.entry_count == 2  # the session stays
    append(moved, chain_lines(1, start=2)[0])
    result = following.sync_file(str(moved), owner)
    assert (result.action, result.entries_added) == ("appended", 1)
    state = FollowedFile.objects.get(session=session)
    assert (state.path, state.state) == (str(moved), "following")
    session.refresh_from_db()
    assert session.source_path == str(moved)


def test_not_a_pi_file_is_reported_once(tmp_path, owner, caplog):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": "world"}\n')
    with caplog.at_level(logging.WARNING, logger="piweb.follow"):
        for _ in range(3):
            totals = following.scan([str(tmp_path)], owner)
        path.write_text('{"hello": "world"}\n{"more": 1}\n')
        following.scan([str(tmp_path)], owner)
    assert totals.refused == 0  # unchanged since it was refused
    warnings = [r.getMessage() for r in caplog.records if r.name == "piweb.follow"]
    assert len(warnings) == 1 and "notes.jsonl: not followed" in warnings[0]
    assert not Session.objects.exists()


@contextlib.contextmanager
def as_an_ordinary_account():
    """Root opens any file whatever its mode: a root test run scans as ``nobody`` (the
    effective uid alone, given back after), so a file's mode 000 is a real fault."""
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)


@pytest.fixture
def open_folder():
    """A folder other accounts may list (under /tmp: the test folders' file system may
    refuse every other account)."""
    folder = Path(tempfile.mkdtemp(prefix="piweb-follow-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def test_unreadable_file_is_logged_and_the_scan_goes_on(open_folder, owner, caplog):
    tmp_path = open_folder
    bad = session_file(tmp_path, 1, sid="0199aaaa-bbbb-7ccc-8ddd-00000000000b")
    good = session_file(tmp_path, 2)
    for folder in {bad.parent, good.parent}:
        folder.chmod(0o755)
    bad.chmod(0)  # a real file the follower cannot open
    with caplog.at_level(logging.WARNING, logger="piweb.follow"), as_an_ordinary_account():
        totals = following.scan([str(tmp_path)], owner)
    assert (totals.errors, totals.changed) == (1, 1)
    assert any(
        str(bad) in r.getMessage() and "Permission denied" in r.getMessage() for r in caplog.records
    )
    assert Session.objects.get(pi_id=SID).entry_count == 2
    bad.chmod(0o644)
    totals = following.scan([str(tmp_path)], owner)
    assert totals.changed == 1 and Session.objects.count() == 2
    assert str(good) in FollowedFile.objects.values_list("path", flat=True)


def test_scan_skips_unchanged_files_and_marks_deleted_ones(tmp_path, owner):
    paths = [
        session_file(tmp_path / f"d{n}", 1, sid=f"0199aaaa-bbbb-7ccc-8ddd-{n:012d}")
        for n in range(5)
    ]
    first = following.scan([str(tmp_path)], owner)
    assert (first.files, first.changed) == (5, 5)
    again = following.scan([str(tmp_path)], owner)
    assert (again.unchanged, again.changed) == (5, 0)
    paths[0].unlink()
    third = following.scan([str(tmp_path)], owner)
    assert third.gone == 1 and Session.objects.count() == 5


def test_runpiweb_banner_says_how_to_follow_the_pi_folder(tmp_path, settings, owner, make_user):
    from io import StringIO

    from sessions_app.management.commands.runpiweb import Command

    settings.PIWEB_PI_SESSION_DIRS = []
    settings.PIWEB_PI_DEFAULT_SESSION_DIR = tmp_path

    def banner():
        command = Command(stdout=StringIO(), stderr=StringIO())
        command._follow_banner(command._follower())
        return command.stdout._out.getvalue()

    assert f"PIWEB_PI_SESSION_DIRS={tmp_path}" in banner()
    settings.PIWEB_PI_DEFAULT_SESSION_DIR = tmp_path / "missing"
    assert banner() == ""
    settings.PIWEB_PI_DEFAULT_SESSION_DIR = tmp_path
    make_user("colleague")
    assert banner() == ""  # a team server: no hint about one person's folder
    # following asked for, but no owner can be told: said so, nothing started
    settings.PIWEB_PI_SESSION_DIRS = [str(tmp_path)]
    command = Command(stdout=StringIO(), stderr=StringIO())
    assert command._follower() is None
    assert "PIWEB_PI_SESSION_OWNER" in command.stderr._out.getvalue()
    settings.PIWEB_PI_SESSION_OWNER = owner.username
    assert command._follower()[-2:] == ["--owner", owner.username]


# The first scan's batch path (services/following.py `_scan_new`, importer.NewSessionsBatch):
# new files imported many per transaction must give exactly what importing them one by one
# gives, and a run that fails or is killed half way must leave nothing twice.
def sid(n: int) -> str:
    return f"0199bbbb-cccc-7ddd-8eee-{n:012d}"


def assistant(eid, parent, text, ts, model="m", day=1, cost=0.5):
    entry = message(eid, parent, "assistant", text, ts)
    entry["timestamp"] = f"2026-01-{day:02d}T00:00:{ts % 60:02d}.000Z"
    entry["message"]["model"] = model
    entry["message"]["usage"] = {
        "input": 10 + ts,
        "output": 5,
        "cacheRead": 1,
        "cacheWrite": 0,
        "totalTokens": 16 + ts,
        "cost": {"input": cost, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": cost},
    }
    return entry


def varied_entries(n: int) -> list[dict]:
    """A session with what changes more than its own row: usage on two days and two
    models, a name, labels (one removed again), a forward reference, a first message."""
    entries = [message("00000001", None, "user", f"hello from file {n} alpha{n}", 1)]
    parent = "00000001"
    for i in range(2, 6 + n % 4):
        eid = f"{i:08x}"
        if i % 2:
            entries.append(message(eid, parent, "user", f"question {i} of file {n}", i))
        else:
            entries.append(assistant(eid, parent, f"answer {i} beta{n}", i, f"m{i % 3}", 1 + i % 2))
        parent = eid
    entries.append(
        {
            "type": "session_info",
            "id": "000000a1",
            "parentId": parent,
            "timestamp": "2026-01-02T00:00:00.000Z",
            "name": f"named {n}",
        }
    )
    entries.append(
        {
            "type": "label",
            "id": "000000a2",
            "parentId": "000000a1",
            "timestamp": "2026-01-02T00:00:01.000Z",
            "targetId": "00000002",
            "label": f"mark {n}",
        }
    )
    if n % 2:
        entries.append(
            {
                "type": "label",
                "id": "000000a3",
                "parentId": "000000a2",
                "timestamp": "2026-01-02T00:00:02.000Z",
                "targetId": "00000002",
            }
        )
    # written before its parent (a forward reference, settled at the end)
    entries.append(message("000000b2", "000000b1", "user", "after", 50))
    entries.append(message("000000b1", entries[-2]["id"], "assistant", "before", 51))
    return entries


def write(path, items: list[dict], tail: bytes = b"") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line(item) for item in items) + tail)


def build_folder(root) -> None:
    """New files of every kind, in pi's layout, sorted as the scan reads them."""
    for n in range(14):
        folder = root / f"--home-dev-p{n % 3}--"
        write(folder / f"a{n:02d}_{sid(n)}.jsonl", [header(sid(n)), *varied_entries(n)])
    p0 = root / "--home-dev-p0--"
    # a half-written last line, a malformed line, a header only, an empty file
    write(
        p0 / f"b1_{sid(100)}.jsonl",
        [header(sid(100)), message("00000001", None, "user", "half", 1)],
        b'{"type":"message","id":"00000002"',
    )
    path = p0 / f"b2_{sid(101)}.jsonl"
    write(path, [header(sid(101)), message("00000001", None, "user", "ok", 1)])
    with open(path, "ab") as fh:
        fh.write(b"{not json\n" + line(message("00000002", "00000001", "user", "after bad", 2)))
    write(p0 / f"b3_{sid(102)}.jsonl", [header(sid(102))])
    (p0 / "b4_empty.jsonl").write_bytes(b"")
    # not pi files; a header id used twice; a fork of a session scanned before it
    (p0 / "b5_notes.jsonl").write_text('{"hello": "world"}\n')
    write(p0 / f"b6_copy_{sid(1)}.jsonl", [header(sid(1)), *varied_entries(1)])
    fork = header(sid(103), parentSession=f"/x/a00_{sid(0)}.jsonl")
    write(p0 / f"b7_{sid(103)}.jsonl", [fork, *varied_entries(0)[:3]])
    # a v2 file (migrated as a whole) and a file with a duplicate entry id (refused)
    v2 = {**header(sid(104)), "version": 2}
    write(p0 / f"b8_{sid(104)}.jsonl", [v2, message("00000001", None, "user", "old", 1)])
    dup = message("00000001", None, "user", "one", 1)
    write(root / "--zz--" / f"b9_{sid(105)}.jsonl", [header(sid(105)), dup, dup])
    (root / "--zz--" / "b0_empty.jsonl").write_bytes(b"")  # (b9 then goes alone)


def snapshot(owner) -> dict:
    """Everything the scan wrote, by natural keys (primary keys and clocks differ)."""
    sessions = {}
    for s in Session.objects.order_by("pi_id"):
        sessions[s.pi_id] = {
            "leaf": s.leaf.pi_id if s.leaf_id else None,
            "parent": s.parent.pi_id if s.parent_id else None,
            **{
                f: getattr(s, f)
                for f in (
                    "version",
                    "cwd",
                    "header_timestamp",
                    "parent_session_ref",
                    "name",
                    "source",
                    "next_seq",
                    "entry_count",
                    "first_message",
                    "import_sha256",
                    "header_line",
                    "source_path",
                    "started_at",
                    "last_activity_at",
                    "usage_tokens",
                    "usage_models",
                )
            },
            "usage_cost": round(s.usage_cost, 9),
        }

    def rows(model, order):
        """Every column of every row, keys for ids (floats rounded: sums of costs)."""
        names = [
            f.attname for f in model._meta.concrete_fields if f.attname not in ("id", "session_id")
        ]
        names = ["session__pi_id", *(n if n != "parent_id" else "parent__pi_id" for n in names)]
        return [
            tuple(round(v, 9) if isinstance(v, float) else v for v in row)
            for row in model.objects.order_by(*order).values_list(*names)
        ]

    entries = rows(Entry, ["session__pi_id", "seq"])
    usage = rows(UsageDaily, ["session__pi_id", "day", "key", "copied"])
    followed = sorted(
        (
            f.path,
            f.session.pi_id if f.session_id else None,
            f.state,
            f.message,
            f.size,
            f.offset,
            f.lines,
            f.head_hash,
            f.tail_hash,
            f.appendable,
            f.last_read_at is not None,
        )
        for f in FollowedFile.objects.select_related("session")
    )
    activity = sorted(
        (a.session.pi_id, a.verb, sorted(a.details.items()), a.actor_id == owner.pk)
        for a in Activity.objects.select_related("session")
    )
    hits = {
        word: sorted((h.session_pi_id, h.entry_pi_id) for h in search.search(owner, word).hits)
        for word in ("alpha3", "beta7", "question", "after bad", "named")
    }
    return {
        "sessions": sessions,
        "entries": entries,
        "usage": usage,
        "followed": followed,
        "activity": activity,
        "search_documents": SearchDocument.objects.count(),
        "hits": hits,
    }


def wipe() -> None:
    for model in (FollowedFile, Activity, UsageDaily, SearchDocument):
        model.objects.all().delete()
    Session.objects.update(leaf=None)
    Entry.objects.all().delete()
    Session.objects.all().delete()


def use_read_ahead(settings, monkeypatch) -> None:
    """Helper processes prepare every run, however small (`core.read_ahead`)."""
    settings.PIWEB_FOLLOW_READ_AHEAD = "on"
    monkeypatch.setattr(following, "READ_AHEAD_BYTES", 0)


@pytest.mark.parametrize("read_ahead", [False, True], ids=["here", "helpers"])
def test_a_scan_in_batches_gives_what_one_file_at_a_time_gives(
    tmp_path, owner, monkeypatch, settings, read_ahead
):
    if read_ahead:
        use_read_ahead(settings, monkeypatch)
    build_folder(tmp_path)
    files = len(list(tmp_path.rglob("*.jsonl")))
    bar = tqdm(total=sum(p.stat().st_size for p in tmp_path.rglob("*.jsonl")), file=io.StringIO())
    with CaptureQueriesContext(connection) as batched_queries:
        batched = following.scan([str(tmp_path)], owner, progress=bar)
    assert bar.n == bar.total
    together = snapshot(owner)
    again = following.scan([str(tmp_path)], owner)
    assert (again.unchanged, again.changed) == (files, 0)

    wipe()
    monkeypatch.setattr(following, "RUN_FILES", 1)  # every file alone
    with CaptureQueriesContext(connection) as alone_queries:
        alone = following.scan([str(tmp_path)], owner)
    assert snapshot(owner) == together
    assert vars(batched) == vars(alone)
    assert (batched.files, batched.refused, batched.errors) == (files, 2, 0)  # notes, dup id
    assert batched.changed == files - 3  # (and the copy is the session read before it)
    assert batched.entries_added == Entry.objects.count() > 100

    # the batches created their sessions a run at a time
    def session_inserts(queries):
        return sum('INSERT INTO "sessions_app_session"' in q["sql"] for q in queries)

    # (one each, and one for the file refused, rolled back)
    assert session_inserts(alone_queries) == Session.objects.count() + 1 == 20
    # two runs; alone: the copy (then a run of one), the fork, the v2 file, the refused one
    assert session_inserts(batched_queries) == 2 + 4
    # the sessions of a batch are complete: the usage totals match their entries
    s3 = Session.objects.get(pi_id=sid(3))
    assert s3.usage_tokens == sum(
        u.input + u.output + u.cache_read + u.cache_write
        for u in UsageDaily.objects.filter(session=s3)
    )
    assert Entry.objects.get(session=s3, pi_id="00000002").label == ""  # removed again
    s4 = Session.objects.get(pi_id=sid(4))
    assert Entry.objects.get(session=s4, pi_id="00000002").label == "mark 4"
    assert Entry.objects.get(session=s3, pi_id="000000b2").parent.pi_id == "000000b1"
    assert Session.objects.get(pi_id=sid(103)).parent.pi_id == sid(0)


def test_a_file_that_fails_in_a_batch_rolls_the_batch_back_and_each_file_goes_alone(
    tmp_path, owner
):
    """A duplicate entry id is found only while the file is read, in the middle of a
    run: nothing of the run stays, and every other file is then imported once."""
    for n in range(6):
        entries = varied_entries(n)
        if n == 3:
            entries.append(entries[0])  # the same id again, at the end
        write(tmp_path / "--p--" / f"{n:02d}_{sid(n)}.jsonl", [header(sid(n)), *entries])
    totals = following.scan([str(tmp_path)], owner)
    assert (totals.changed, totals.refused) == (5, 1)
    assert not Session.objects.filter(pi_id=sid(3)).exists()
    for n in (0, 1, 2, 4, 5):
        session = Session.objects.get(pi_id=sid(n))
        assert session.entry_count == len(varied_entries(n))
        assert Entry.objects.filter(session=session).count() == session.entry_count
        assert Activity.objects.filter(session=session).count() == 1
    assert FollowedFile.objects.get(path__endswith=f"03_{sid(3)}.jsonl").state == "refused"


def test_a_run_the_helpers_cannot_send_is_imported_file_by_file(
    tmp_path, owner, monkeypatch, settings, caplog
):
    """A valid pi file whose header holds an integer beyond 64 bits cannot travel from a
    helper (msgpack): its run fails, and the files are then imported one by one, with
    the same result as without helpers."""
    for n in range(5):
        write(tmp_path / "--p--" / f"{n:02d}_{sid(n)}.jsonl", [header(sid(n)), *varied_entries(n)])
    big = tmp_path / "--p--" / f"02_{sid(2)}.jsonl"  # (written by hand: JSON.stringify says 1e+30)
    big.write_bytes(
        big.read_bytes().replace(b'"version":3,', b'"version":3,"n":' + b"1" * 31 + b",", 1)
    )
    totals = following.scan([str(tmp_path)], owner)
    without = snapshot(owner)
    wipe()
    use_read_ahead(settings, monkeypatch)
    bar = tqdm(total=sum(p.stat().st_size for p in tmp_path.rglob("*.jsonl")), file=io.StringIO())
    with caplog.at_level("INFO", logger="piweb.follow"):
        again = following.scan([str(tmp_path)], owner, progress=bar)
    assert bar.n == bar.total  # (the failed run's files counted once, not twice)
    (why,) = [r.getMessage() for r in caplog.records if "one by one" in r.getMessage()]
    assert why.startswith("5 new files imported one by one") and str(big) in why
    assert vars(again) == vars(totals) and totals.changed == 5
    assert snapshot(owner) == without


def test_killed_in_the_middle_of_a_batch_then_restarted(tmp_path, owner, child_env):
    """A real follower process killed (SIGKILL) while it imports batches of new files:
    what was committed stays, what was not is read again, nothing twice. Its read-ahead
    helpers (runs of more than READ_AHEAD_BYTES) end with it."""
    count = 2 * following.RUN_FILES + 100  # more than two runs
    for n in range(count):
        entries = [message("00000001", None, "user", f"start {n} " + "x" * 2200, 1)]
        for i in range(2, 11):
            entries.append(
                message(f"{i:08x}", f"{i - 1:08x}", "user", f"text {n} {i} " + "y" * 2200, i)
            )
        write(tmp_path / f"--p{n % 5}--" / f"{n:03d}_{sid(n)}.jsonl", [header(sid(n)), *entries])
    argv = [
        sys.executable,
        str(REPO / "manage.py"),
        "watch_pi_sessions",
        str(tmp_path),
        "--owner",
        owner.username,
        "--once",
        "--verbosity",
        "0",
    ]
    env = {**child_env, "PIWEB_FOLLOW_READ_AHEAD": "on"}
    proc = subprocess.Popen(
        argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    helpers = []
    try:
        deadline = time.monotonic() + 120
        while FollowedFile.objects.count() == 0 and proc.poll() is None:
            assert time.monotonic() < deadline, "the follower committed nothing"
            helpers = helpers or [
                child
                for child in psutil.Process(proc.pid).children()
                if "sessions_app.core.read_ahead" in " ".join(child.cmdline())
            ]
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    assert helpers, "the follower's runs were not prepared by helpers"
    _gone, alive = psutil.wait_procs(helpers, timeout=15)
    assert alive == []
    committed = FollowedFile.objects.count()
    assert 0 < committed < count, committed  # killed between two commits
    assert committed % following.RUN_FILES == 0  # whole runs only
    # every committed file is whole
    for session in Session.objects.all():
        assert Entry.objects.filter(session=session).count() == session.entry_count == 10
    done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert Session.objects.count() == count
    assert Entry.objects.count() == count * 10
    assert FollowedFile.objects.filter(state="following").count() == count
    assert Activity.objects.filter(verb="imported").count() == count
    assert sorted(Session.objects.values_list("entry_count", flat=True)) == [10] * count
    assert UsageDaily.objects.count() == 0  # (user messages only: no usage)
    assert serialize_entry(header(sid(0))) == Session.objects.get(pi_id=sid(0)).header_line
