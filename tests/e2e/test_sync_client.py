"""The sync client as served: downloaded from a running piweb at /sync/piweb_sync.py and
run by a python3 with no packages, against the real server over HTTP. It follows a
"laptop" folder while a pi-like writer appends (half lines included), sends a file pi
rewrote whole, pushes chosen files, writes piweb's lines back, and survives faults: the
client killed mid-line, the server restarted, the connection dropped, the same batch
sent twice. Each time the session's pi JSONL export equals the laptop's file, byte for
byte."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest

from sessions_app.models import Session
from sessions_app.services import sessions, sync_tokens
from tests.support.pi_files import chain_lines, header, line
from tests.support.scripted_llm import text
from tests.support.sync_client import (
    DroppingProxy,
    download_client,
    push_files,
    run_client,
    server_export,
    server_process,
)
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def laptop(child_env, tmp_path, make_user):
    """A server of this test's own, the client downloaded from it, a token, a folder."""
    server = server_process(child_env, tmp_path).start()
    user = make_user()
    folder = tmp_path / "sessions" / "--home-alice-code-app--"
    folder.mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    yield type(
        "Laptop",
        (),
        {
            "server": server,
            "user": user,
            "token": sync_tokens.create_token(user, "laptop")[1],
            "root": tmp_path / "sessions",
            "folder": folder,
            "client": download_client(server.url, bin_dir),
            "state": tmp_path / "state.json",
            "log": tmp_path / "client.log",
        },
    )
    server.stop()


def _new_file(folder, sid: str, count: int):
    path = folder / f"2026-01-01T00-00-00-000Z_{sid}.jsonl"
    path.write_bytes(line(header(sid)) + b"".join(chain_lines(count)))
    return path


def _same_on_server(lap, path, sid, timeout=60.0, url=None) -> bool:
    want = path.read_bytes()
    return bool(
        wait_until(lambda: server_export(url or lap.server.url, lap.token, sid) == want, timeout)
    )


def _write_half_then_rest(path, data: bytes, pause: float = 0.3):
    """A line written in two parts, as a slow writer would."""
    with open(path, "ab") as fh:
        fh.write(data[: len(data) // 2])
        fh.flush()
        time.sleep(pause)
        fh.write(data[len(data) // 2 :])


def _follow(lap, *args, url=None, python=None):
    return run_client(
        lap.client,
        url or lap.server.url,
        lap.token,
        lap.state,
        "follow",
        str(lap.root),
        *args,
        log=lap.log,
        python=python,
    )


def _stop(proc):
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    except Exception:
        proc.kill()


def test_follow_push_and_a_rewrite_with_the_served_client(laptop):
    lap = laptop
    sid = "0199aaaa-bbbb-7ccc-8ddd-0000000000e1"
    path = _new_file(lap.folder, sid, 4)
    client = _follow(lap)
    try:
        assert _same_on_server(lap, path, sid), lap.log.read_text()
        for new in chain_lines(6, start=4):
            _write_half_then_rest(path, new, pause=0.05)
        assert _same_on_server(lap, path, sid), lap.log.read_text()
        # pi rewrites the file: a new inode with the same lines and more
        whole = path.read_bytes() + b"".join(chain_lines(2, start=10))
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(whole)
        os.replace(tmp, path)
        assert _same_on_server(lap, path, sid), lap.log.read_text()
    finally:
        _stop(client)
    session = Session.objects.get(pi_id=sid)
    assert session.entry_count == 12
    assert session.synced_files.get().client_path.endswith(path.name)
    # push: a file of its own, sent once
    other_sid = "0199aaaa-bbbb-7ccc-8ddd-0000000000e2"
    other = _new_file(lap.folder, other_sid, 3)
    out = push_files(lap.client, lap.server.url, lap.token, lap.state, other)
    assert f"sent {other.stat().st_size} bytes" in out
    assert server_export(lap.server.url, lap.token, other_sid) == other.read_bytes()


def test_faults_lose_and_duplicate_nothing(laptop):
    lap = laptop
    sid = "0199aaaa-bbbb-7ccc-8ddd-0000000000e3"
    path = _new_file(lap.folder, sid, 2)
    proxy = DroppingProxy(lap.server.port)
    lines = iter(chain_lines(200, start=2))
    client = _follow(lap, url=proxy.url)
    try:
        assert _same_on_server(lap, path, sid)
        # the client killed while pi is in the middle of a line, then started again
        half_written = next(lines)
        with open(path, "ab") as fh:
            fh.write(half_written[:20])
        time.sleep(0.5)  # the client looks at the half line (and sends nothing of it)
        client.kill()
        client.wait()
        with open(path, "ab") as fh:
            fh.write(half_written[20:])
        client = _follow(lap, url=proxy.url)
        assert _same_on_server(lap, path, sid), lap.log.read_text()
        # the server restarted while the client runs and pi writes
        lap.server.stop()
        for _ in range(5):
            with open(path, "ab") as fh:
                fh.write(next(lines))
        lap.server.start()
        assert _same_on_server(lap, path, sid), lap.log.read_text()
        # connections dropped again and again while pi writes
        for _ in range(10):
            with open(path, "ab") as fh:
                fh.write(next(lines))
            time.sleep(0.05)
            proxy.drop()
        assert _same_on_server(lap, path, sid), lap.log.read_text()
    finally:
        _stop(client)
        proxy.close()
    # the same batch sent twice: a state file from the past sends it all again
    lap.state.unlink()
    push_files(lap.client, lap.server.url, lap.token, lap.state, path)
    assert server_export(lap.server.url, lap.token, sid) == path.read_bytes()
    assert Session.objects.get(pi_id=sid).entry_count == path.read_bytes().count(b"\n") - 1


def test_piweb_lines_are_written_back_when_pi_is_quiet(laptop):
    lap = laptop
    sid = "0199aaaa-bbbb-7ccc-8ddd-0000000000e4"
    path = _new_file(lap.folder, sid, 2)
    client = _follow(lap, "--write-back", "--quiet", "0.5")
    try:
        assert _same_on_server(lap, path, sid)
        session = Session.objects.get(pi_id=sid)
        entry = sessions.append_entry(session, {"type": "session_info", "name": "reviewed"})
        assert wait_until(lambda: entry.line.encode() in path.read_bytes(), 30), lap.log.read_text()
        assert path.read_bytes().endswith((entry.line + "\n").encode())
        assert wait_until(lambda: not session.synced_files.get().pending, 30)
        assert _same_on_server(lap, path, sid)
    finally:
        _stop(client)
    assert Session.objects.get(pi_id=sid).entry_count == 3


@pytest.mark.usefixtures("tasks_stay_in_process")
def test_pi_round_trip_through_the_served_client(laptop, llm, settings):
    """pi 0.80.2 writes a session on the "laptop"; the client sends it; piweb continues it
    (the chat service the page's send button calls); the client writes the turn back; pi
    resumes the file with piweb's question and answer in its next request."""
    from sessions_app.services import chat, jobs
    from tests.support.pi_reference import pi_cli_or_skip, run_pi, write_models_json

    lap = laptop
    node = pi_cli_or_skip("0.80.2")
    home = lap.root.parent / "home"
    project = home / "proj"
    project.mkdir(parents=True)
    agent = lap.root.parent / "agent"
    write_models_json(agent, llm.base_url)
    settings.PIWEB_WORKSPACE_MODE = "single-user"
    settings.PIWEB_WORKSPACE_ROOTS = [home.resolve()]

    def pi(*args):
        return run_pi(node, "0.80.2", [*args], cwd=project, agent_dir=agent, home=home)

    llm.push(text("pi answer one"))
    pi("--session-dir", str(lap.folder), "one")
    (path,) = lap.folder.glob("*.jsonl")
    sid = json.loads(path.read_text().splitlines()[0])["id"]
    client = _follow(lap, "--write-back", "--quiet", "0.5")
    try:
        assert _same_on_server(lap, path, sid), lap.log.read_text()
        session = Session.objects.get(pi_id=sid)
        Session.objects.filter(pk=session.pk).update(model_profile="scripted")
        session.refresh_from_db()
        llm.push(text("piweb answer two"))
        job = chat.send_message(session, lap.user, "two from piweb")
        assert jobs.run_job(str(job.pk)) == "done"
        assert wait_until(lambda: b"piweb answer two" in path.read_bytes(), 30), lap.log.read_text()
        assert _same_on_server(lap, path, sid), lap.log.read_text()
    finally:
        _stop(client)
    llm.push(text("pi answer three"))
    pi("--session", str(path), "three")
    seen = [
        (m["role"], m["content"] if isinstance(m["content"], str) else m["content"][0]["text"])
        for m in llm.requests[-1]["messages"]
        if m["role"] in ("user", "assistant")
    ]
    assert seen == [
        ("user", "one"),
        ("assistant", "pi answer one"),
        ("user", "two from piweb"),
        ("assistant", "piweb answer two"),
        ("user", "three"),
    ]


def test_the_open_page_shows_the_laptops_lines_as_they_come(laptop, page_for):
    lap = laptop
    sid = "0199aaaa-bbbb-7ccc-8ddd-0000000000e5"
    path = _new_file(lap.folder, sid, 2)
    client = _follow(lap)
    try:
        assert _same_on_server(lap, path, sid), lap.log.read_text()
        page = page_for(lap.user)
        page.goto(f"/s/{sid}/")
        page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
        page.evaluate("() => { window.piwebNotReloaded = true; }")
        page.click("#session-more > summary")  # where the session comes from: the ⋯ menu
        assert "Synced live from test laptop" in page.locator(".provenance").inner_text()
        assert path.name in page.locator(".resume-command").inner_text()
        for n in range(2, 5):
            with open(path, "ab") as fh:
                fh.write(chain_lines(1, start=n)[0])
            page.wait_for_selector(f'#tree-panel .tn[data-id="{n:08x}"]', timeout=15000)
            page.wait_for_function(
                "(text) => document.querySelector('#chat-transcript').innerText.includes(text)",
                arg=f"text number {n}",
                timeout=15000,
            )
        assert page.evaluate("() => window.piwebNotReloaded") is True
        assert page.csp_violations == []
    finally:
        _stop(client)


def test_a_server_that_takes_smaller_requests_gets_smaller_batches(child_env, tmp_path, make_user):
    server = server_process({**child_env, "PIWEB_SYNC_MAX_BATCH_BYTES": "300000"}, tmp_path)
    server.start()
    try:
        user = make_user()
        token = sync_tokens.create_token(user, "laptop")[1]
        client = download_client(server.url, tmp_path)
        sid = "0199aaaa-bbbb-7ccc-8ddd-0000000000e6"
        path = _new_file(tmp_path, sid, 6000)  # about 1 MB
        assert path.stat().st_size > 900_000
        push_files(client, server.url, token, tmp_path / "state.json", path)
        assert server_export(server.url, token, sid) == path.read_bytes()
    finally:
        server.stop()


def test_with_watchfiles_installed_it_follows_on_changes(laptop):
    """The .venv's python has watchfiles: the client waits for changes instead of looking
    ten times a second, and a symbolic link to a session file is not followed."""
    lap = laptop
    sid = "0199aaaa-bbbb-7ccc-8ddd-0000000000e7"
    path = _new_file(lap.folder, sid, 2)
    (lap.folder / "link.jsonl").symlink_to(path)
    client = _follow(lap, "--interval", "30", python=[sys.executable])
    try:
        assert _same_on_server(lap, path, sid, timeout=30), lap.log.read_text()
        for new in chain_lines(3, start=2):
            with open(path, "ab") as fh:
                fh.write(new)
        assert _same_on_server(lap, path, sid, timeout=15), lap.log.read_text()
    finally:
        _stop(client)
    assert "link.jsonl" not in lap.log.read_text()


@pytest.mark.worker
def test_pi_round_trip_continued_in_the_browser(laptop, llm, worker, page_for, workspace):
    """The acceptance's round trip with the browser: pi 0.80.2 writes on the "laptop"
    (its project is a workspace of the user's, so piweb's worker may run there), the page
    shows pi's lines, the user sends a message in the page, the worker answers, the client
    writes the turn back, and pi resumes the file with piweb's question and answer."""
    from tests.support.pi_reference import pi_cli_or_skip, run_pi, write_models_json
    from tests.support.workspaces import place_workspace

    lap = laptop
    node = pi_cli_or_skip("0.80.2")
    project = place_workspace(lap.user, workspace)
    home = lap.root.parent / "home"
    home.mkdir()
    agent = lap.root.parent / "agent"
    write_models_json(agent, llm.base_url)

    def pi(*args):
        return run_pi(node, "0.80.2", [*args], cwd=project, agent_dir=agent, home=home)

    llm.push(text("pi answer one"))
    pi("--session-dir", str(lap.folder), "one")
    (path,) = lap.folder.glob("*.jsonl")
    sid = json.loads(path.read_text().splitlines()[0])["id"]
    client = _follow(lap, "--write-back", "--quiet", "0.5")
    try:
        assert _same_on_server(lap, path, sid), lap.log.read_text()
        Session.objects.filter(pi_id=sid).update(model_profile="scripted")
        page = page_for(lap.user)
        page.goto(f"/s/{sid}/")
        page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
        page.wait_for_function(
            "() => document.querySelector('#chat-transcript').innerText.includes('pi answer one')",
            timeout=15000,
        )
        llm.push(text("piweb answer two"))
        page.fill("#chat-input", "two from the browser")
        page.press("#chat-input", "Enter")
        page.wait_for_function(
            "() => document.querySelector('#chat-transcript').innerText"
            ".includes('piweb answer two')",
            timeout=30000,
        )
        assert wait_until(lambda: b"piweb answer two" in path.read_bytes(), 30), lap.log.read_text()
        assert _same_on_server(lap, path, sid), lap.log.read_text()
    finally:
        _stop(client)
    llm.push(text("pi answer three"))
    pi("--session", str(path), "three")
    seen = [
        (m["role"], m["content"] if isinstance(m["content"], str) else m["content"][0]["text"])
        for m in llm.requests[-1]["messages"]
        if m["role"] in ("user", "assistant")
    ]
    assert seen == [
        ("user", "one"),
        ("assistant", "pi answer one"),
        ("user", "two from the browser"),
        ("assistant", "piweb answer two"),
        ("user", "three"),
    ]


@pytest.mark.urls("tests.support.urls_before_push_lines")
def test_a_server_without_push_jsonl_gets_the_lines_in_json_bodies(
    live_server, make_user, tmp_path
):
    """An older server (its 404 page for files/push.jsonl): the client sends the same
    batches to files/push, and the server ends with the laptop's file."""
    token = sync_tokens.create_token(make_user(), "laptop")[1]
    client = download_client(live_server.url, tmp_path)
    sid = "0199aaaa-bbbb-7ccc-8ddd-0000000000e7"
    path = _new_file(tmp_path, sid, 40)
    push_files(client, live_server.url, token, tmp_path / "state.json", path)
    assert server_export(live_server.url, token, sid) == path.read_bytes()
