"""The first scan's batch path (services/following.py `_scan_new`, importer.NewSessionsBatch):
new files imported many per transaction must give exactly what importing them one by one
gives, and a run that fails or is killed half way must leave nothing twice."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from tqdm import tqdm

from sessions_app.core.jsonl import serialize_entry
from sessions_app.models import Activity, Entry, FollowedFile, SearchDocument, Session, UsageDaily
from sessions_app.services import following, search
from tests.conftest import REPO
from tests.service.test_following import line
from tests.support.pi_files import header, message

pytestmark = [pytest.mark.embedded, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner(make_user):
    return make_user("batch-follower")


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
