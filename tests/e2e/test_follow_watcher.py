"""`manage.py watch_pi_sessions` as a real process with a real watcher (watchfiles) on a
temporary folder, the real database, Redis and, for the page, daphne and Chromium.

The follower runs with `--rescan-seconds 0` (no periodic rescan), so everything it
picks up here came from the filesystem's change events. The tests marked `embedded` also
run on SQLite (the follower then writes from one thread)."""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid

import pytest

from sessions_app.models import Entry, FollowedFile, Session
from sessions_app.selectors import search
from sessions_app.selectors.exporter import export_bytes
from tests.support.pi_files import append, chain_lines, header, line, message
from tests.support.processes import REPO, ManagedProcess, free_port

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner(make_user):
    return make_user("pi-user")


@pytest.fixture
def follower(transactional_db, child_env, tmp_path_factory):
    """start(folder, owner) -> a running watch_pi_sessions process (stopped at the end).

    It asks for the database first, so it is torn down first: the process is stopped
    before the test database is flushed (its last commits would otherwise hold locks that
    deadlock the flush)."""
    started: list[ManagedProcess] = []
    log_dir = tmp_path_factory.mktemp("follower")

    def start(folder, user, *extra):
        proc = ManagedProcess(
            f"follower-{len(started)}",
            [
                sys.executable,
                str(REPO / "manage.py"),
                "watch_pi_sessions",
                str(folder),
                "--owner",
                user.username,
                "--rescan-seconds",
                "0",
                *extra,
            ],
            child_env,
            lambda p: "Following " in p.log.read_text(errors="replace"),
            log_dir,
        )
        started.append(proc)
        return proc.start(timeout=120)

    yield start
    for proc in started:
        proc.stop()


def wait_until(predicate, timeout: float = 30, what: str = "the follower", proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    tail = proc.log.read_text(errors="replace")[-3000:] if proc else ""
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


def caught_up(path) -> bool:
    """The follower has read the file to its end (its position is the file's size, on the
    file's inode): whatever the file holds is imported, so nothing more will come."""
    info = path.stat()
    return FollowedFile.objects.filter(
        path=str(path), offset=info.st_size, inode=info.st_ino
    ).exists()


def sid() -> str:
    return f"0199{uuid.uuid4().hex[:4]}-aaaa-7bbb-8ccc-{uuid.uuid4().hex[:12]}"


def pi_path(folder, session_id: str):
    path = folder / "--home-me-project--" / f"2026-01-01T00-00-00-000Z_{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def count(session_id: str) -> int:
    return Entry.objects.filter(session__pi_id=session_id).count()


def ids(session_id: str) -> list[str]:
    return list(
        Entry.objects.filter(session__pi_id=session_id)
        .order_by("seq")
        .values_list("pi_id", flat=True)
    )


def hexes(n: int, start: int = 0) -> list[str]:
    return [f"{i:08x}" for i in range(start, start + n)]


def test_a_growing_file_grows_the_open_page(follower, owner, page_for, tmp_path):
    session_id = sid()
    path = pi_path(tmp_path, session_id)
    path.write_bytes(line(header(session_id)) + b"".join(chain_lines(2)))
    proc = follower(tmp_path, owner)
    wait_until(lambda: count(session_id) == 2, proc=proc)
    session = Session.objects.get(pi_id=session_id)
    page = page_for(owner)
    page.goto(f"/s/{session_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    page.evaluate("() => { window.piwebNotReloaded = true; }")
    assert page.locator("#tree-panel .tn").count() == 2
    page.click("#session-more > summary")  # where the session comes from: the ⋯ menu
    expect = page.locator(".provenance")
    assert "Followed live" in expect.inner_text()
    assert str(path) in page.locator(".resume-command").inner_text()
    for n in range(2, 6):
        append(path, chain_lines(1, start=n)[0])
        page.wait_for_selector(f'#tree-panel .tn[data-id="{n:08x}"]', timeout=15000)
        page.wait_for_function(
            "(text) => document.querySelector('#chat-transcript').innerText.includes(text)",
            arg=f"text number {n}",
            timeout=15000,
        )
    assert page.evaluate("() => window.piwebNotReloaded === true")
    assert page.locator("#tree-panel .tn").count() == 6
    wait_until(
        lambda: (
            [h.entry_pi_id for h in search.search(owner, '"text number 5"').hits] == ["00000005"]
        ),
        what="search to find the appended text",
    )
    session.refresh_from_db()
    assert session.entry_count == 6 and session.leaf.pi_id == "00000005"
    # pi's file is deleted: the page says so, and resuming goes through the export.
    path.unlink()
    page.wait_for_function(
        "() => document.querySelector('.provenance').innerText.includes('gone from disk')",
        timeout=15000,
    )
    assert str(path) not in page.locator(".resume-command").inner_text()
    assert page.evaluate("() => window.piwebNotReloaded === true")


def test_a_new_file_appears_in_the_open_sessions_list(follower, owner, page_for, tmp_path):
    """pi starts a session in the terminal: its row appears in the open list, and its
    entry count grows as pi writes, without a reload (the list's websocket)."""
    proc = follower(tmp_path, owner)
    page = page_for(owner)
    page.goto("/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    page.evaluate("() => { window.piwebNotReloaded = true; }")
    session_id = sid()
    path = pi_path(tmp_path, session_id)
    path.write_bytes(line(header(session_id)) + b"".join(chain_lines(2)))
    row = page.locator(f'#sessions-table tr[data-session="{session_id}"]')
    row.wait_for(timeout=15000)
    entries = row.locator("td.num").first
    assert entries.inner_text() == "2"
    append(path, chain_lines(1, start=2)[0])
    entries_are = (
        "([id, n]) => document.querySelector(`tr[data-session='${id}'] td.num`).innerText === n"
    )
    page.wait_for_function(entries_are, arg=[session_id, "3"], timeout=15000)
    # A tab in the background does not ask; shown again, it catches up.
    page.evaluate(
        "() => Object.defineProperty(document, 'hidden', {value: true, configurable: true})"
    )
    append(path, chain_lines(1, start=3)[0])
    wait_until(lambda: count(session_id) == 4, proc=proc)
    # The list's poll runs a second after the change and, the tab hidden, skips its request.
    page.wait_for_function("() => document.body.dataset.sessionsRefresh === 'missed'")
    assert page.evaluate(entries_are, [session_id, "3"])
    page.evaluate(
        "() => { Object.defineProperty(document, 'hidden', {value: false, configurable: true});"
        " document.dispatchEvent(new Event('visibilitychange')); }"
    )
    page.wait_for_function(entries_are, arg=[session_id, "4"], timeout=15000)
    assert page.evaluate("() => window.piwebNotReloaded === true")


@pytest.mark.embedded
def test_split_line_then_rewrite(follower, owner, tmp_path):
    session_id = sid()
    path = pi_path(tmp_path, session_id)
    proc = follower(tmp_path, owner)
    path.write_bytes(line(header(session_id)) + b"".join(chain_lines(2)))
    wait_until(lambda: count(session_id) == 2, proc=proc)

    # a line in two writes: nothing happens on the first half
    third = chain_lines(1, start=2)[0]
    append(path, third[:40])
    wait_until(
        lambda: FollowedFile.objects.get(path=str(path)).size == path.stat().st_size,
        what="the follower to see the half line",
        proc=proc,
    )
    assert count(session_id) == 2  # (its read of the half line committed: nothing imported)
    append(path, third[40:])
    wait_until(lambda: count(session_id) == 3, proc=proc)
    assert "skipped" not in proc.log.read_text()

    # a rewrite (a new inode, as pi's migration or a sync tool writes it), applied once
    before = path.read_bytes()
    temp = path.with_suffix(".tmp")
    temp.write_bytes(before + b"".join(chain_lines(2, start=3)))
    os.replace(temp, path)
    wait_until(lambda: count(session_id) == 5, proc=proc)
    wait_until(lambda: caught_up(path), what="the follower to reach the end", proc=proc)
    assert ids(session_id) == hexes(5)
    state = FollowedFile.objects.get(path=str(path))
    assert (state.inode, state.offset) == (path.stat().st_ino, path.stat().st_size)
    append(path, chain_lines(1, start=5)[0])
    wait_until(lambda: count(session_id) == 6, proc=proc)
    assert ids(session_id) == hexes(6)
    assert export_bytes(Session.objects.get(pi_id=session_id)) == path.read_bytes()


@pytest.mark.embedded
def test_rename_then_delete(follower, owner, tmp_path):
    session_id = sid()
    path = pi_path(tmp_path, session_id)
    path.write_bytes(line(header(session_id)) + b"".join(chain_lines(2)))
    proc = follower(tmp_path, owner)
    wait_until(lambda: count(session_id) == 2, proc=proc)
    renamed = tmp_path / "elsewhere" / path.name
    renamed.parent.mkdir()
    os.rename(path, renamed)
    wait_until(
        lambda: FollowedFile.objects.filter(path=str(renamed), state="following").exists(),
        what="the rename",
        proc=proc,
    )
    append(renamed, chain_lines(1, start=2)[0])
    wait_until(lambda: count(session_id) == 3, proc=proc)
    session = Session.objects.get(pi_id=session_id)
    assert session.source_path == str(renamed)
    assert FollowedFile.objects.filter(session=session).count() == 1

    renamed.unlink()
    wait_until(
        lambda: FollowedFile.objects.get(path=str(renamed)).state == "gone",
        what="the deletion",
        proc=proc,
    )
    assert ids(session_id) == hexes(3)  # the session stays


def test_two_hundred_files_at_once(follower, owner, tmp_path):
    proc = follower(tmp_path, owner)
    made = []
    for n in range(200):
        session_id = sid()
        path = (
            tmp_path / f"--project-{n % 10}--" / f"2026-01-01T00-00-{n:02d}-000Z_{session_id}.jsonl"
        )
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(line(header(session_id)) + b"".join(chain_lines(3)))
        made.append(session_id)
    wait_until(
        lambda: Entry.objects.filter(session__pi_id__in=made).count() == 600,
        timeout=180,
        what="200 sessions of 3 entries",
        proc=proc,
    )
    assert Session.objects.filter(pi_id__in=made).count() == 200
    assert FollowedFile.objects.filter(state="following").count() == 200


@pytest.mark.embedded
def test_restart_in_the_middle_of_a_growing_file(follower, owner, tmp_path):
    session_id = sid()
    path = pi_path(tmp_path, session_id)
    path.write_bytes(line(header(session_id)))
    total = 300
    data = b"".join(chain_lines(total))
    proc = follower(tmp_path, owner)
    wait_until(lambda: Session.objects.filter(pi_id=session_id).exists(), proc=proc)

    def write():
        # uneven writes that cut lines anywhere, as a busy writer does
        step = 997
        for start in range(0, len(data), step):
            append(path, data[start : start + step])
            time.sleep(0.004)

    writer = threading.Thread(target=write)
    writer.start()
    wait_until(lambda: count(session_id) >= 40, proc=proc)
    proc.kill(9)  # no chance to finish anything
    stopped_at = count(session_id)
    writer.join()
    assert stopped_at < total
    proc2 = follower(tmp_path, owner)
    wait_until(lambda: count(session_id) == total, timeout=60, proc=proc2)
    wait_until(lambda: caught_up(path), what="the follower to reach the end", proc=proc2)
    assert ids(session_id) == hexes(total)
    state = FollowedFile.objects.get(path=str(path))
    assert (state.offset, state.lines) == (path.stat().st_size, total + 1)
    assert export_bytes(Session.objects.get(pi_id=session_id)) == path.read_bytes()


def test_fifty_megabytes_appended_in_64k_chunks(worker, follower, owner, tmp_path):
    session_id = sid()
    path = pi_path(tmp_path, session_id)
    path.write_bytes(line(header(session_id)))
    proc = follower(tmp_path, owner)
    wait_until(lambda: Session.objects.filter(pi_id=session_id).exists(), proc=proc)
    filler = "lorem ipsum dolor sit amet " * 75  # about 2 KB per entry
    lines = []
    size = n = 0
    while size < 50 * 1024 * 1024:
        entry = message(f"{n:08x}", f"{n - 1:08x}" if n else None, "user", f"{n} {filler}", n)
        lines.append(line(entry))
        size += len(lines[-1])
        n += 1
    data = b"".join(lines)
    del lines
    with open(path, "ab") as fh:
        for start in range(0, len(data), 64 * 1024):
            fh.write(data[start : start + 64 * 1024])
            fh.flush()
    wait_until(lambda: count(session_id) == n, timeout=300, what=f"{n} entries", proc=proc)
    wait_until(lambda: caught_up(path), what="the follower to reach the end", proc=proc)
    assert count(session_id) == n
    assert ids(session_id)[-3:] == hexes(3, start=n - 3)
    session = Session.objects.get(pi_id=session_id)
    assert session.entry_count == n and session.leaf.pi_id == f"{n - 1:08x}"
    assert export_bytes(session) == path.read_bytes()
    assert "skipped" not in proc.log.read_text()
    # So many new entries are indexed by the worker: search finds the last one once it is
    # done (and the test ends with no indexing left holding locks on the test database).
    last = f'"{n - 1} lorem"'
    wait_until(lambda: search.search(owner, last).hits, timeout=300, what="indexing", proc=proc)
    proc.stop()
    wait_until(database_is_quiet, timeout=120, what="the worker's last commit")


def database_is_quiet() -> bool:
    """No other connection is inside a statement or a transaction on the test database,
    now and a moment later (PostgreSQL: the flush that ends a test would otherwise wait on
    a worker's commit whose foreign-key checks wait on the flush)."""
    from django.db import connection

    def busy() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND state IS NOT NULL AND state <> 'idle'"
            )
            return cursor.fetchone()[0]

    if connection.vendor != "postgresql":
        return True
    if busy():
        return False
    time.sleep(1.0)
    return busy() == 0


def test_runpiweb_starts_the_follower_beside_the_worker(child_env, make_user, tmp_path):
    """`make run` with PIWEB_PI_SESSION_DIRS: the only superuser owns what is followed."""
    admin = make_user("the-admin", is_superuser=True, is_staff=True)
    session_id = sid()
    path = pi_path(tmp_path, session_id)
    path.write_bytes(line(header(session_id)) + b"".join(chain_lines(2)))
    env = {**child_env, "PIWEB_PI_SESSION_DIRS": str(tmp_path)}
    env.pop("PIWEB_PI_SESSION_OWNER", None)
    port = str(free_port())
    log_dir = tmp_path.parent / f"runpiweb-{uuid.uuid4().hex[:6]}"
    log_dir.mkdir()
    proc = ManagedProcess(
        "runpiweb",
        [sys.executable, str(REPO / "manage.py"), "runpiweb", "--port", port, "--concurrency", "1"],
        env,
        lambda p: "Following pi sessions in" in p.log.read_text(errors="replace"),
        log_dir,
    )
    proc.start(timeout=120)
    try:
        wait_until(lambda: count(session_id) == 2, timeout=90, proc=proc)
        append(path, chain_lines(1, start=2)[0])
        wait_until(lambda: count(session_id) == 3, timeout=30, proc=proc)
        assert Session.objects.get(pi_id=session_id).owner == admin
    finally:
        proc.stop()
