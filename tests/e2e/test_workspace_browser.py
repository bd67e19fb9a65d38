"""An imported pi session continues in the browser in each kind of workspace: its own
folder (where the server allows it), one of the user's workspaces, and a new one (empty,
unpacked from an archive, cloned from a git repository): the chat first says where it
cannot run and offers "Continue in…", then runs there."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
import uuid

import pytest
from playwright.sync_api import expect

from sessions_app.services.importer import import_jsonl_stream
from tests.support.agent_runs import wait_run
from tests.support.workspaces import area_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.worker]

ELSEWHERE = "/Users/someone/code/pi-mono"


def imported_session(owner, cwd=ELSEWHERE):
    lines = [
        {"type": "session", "version": 3, "id": str(uuid.uuid4()),
         "timestamp": "2026-11-30T10:00:00.000Z", "cwd": cwd},
        {"type": "message", "id": "bbbb0001", "parentId": None,
         "timestamp": "2026-11-30T10:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}},
    ]  # fmt: skip
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return import_jsonl_stream(io.BytesIO(data), owner, filename="pi.jsonl").session


def open_and_choose(page_for, user, session, kind, name, fill=None, where=ELSEWHERE):
    page = page_for(user)
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    page.click("#chat-input")  # the choice is asked once the person starts to write
    box = page.locator("#workspace-box")
    expect(box).to_have_attribute("open", "")  # open by itself: the folder is not usable
    expect(page.locator("#workspace-problem")).to_contain_text(where)
    if name:
        page.fill("#workspace-name", name)
    page.check(f'#workspace-form input[name="kind"][value="{kind}"]')
    if fill:
        fill(page)
    page.click("#workspace-submit")
    return page


def run_here(page, session, command, expected):
    # The page reloaded after the choice: the box no longer reports a problem.
    expect(page.locator("#workspace-problem")).to_have_count(0, timeout=15000)
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    page.fill("#chat-input", f"!{command}")
    page.click("#chat-send")
    expect(page.locator("#chat-transcript")).to_contain_text(expected, timeout=30000)
    assert wait_run(session).status == "done"


def test_continue_in_a_new_empty_workspace(worker, page_for, make_user, settings):
    user = make_user()
    session = imported_session(user)
    name = f"empty-{uuid.uuid4().hex[:6]}"
    page = open_and_choose(page_for, user, session, "empty", name)
    folder = str(area_of(settings, user) / name)
    expect(page.locator("#workspace-current")).to_have_text(folder, timeout=15000)
    expect(page.locator("#workspace-problem")).to_have_count(0)
    run_here(page, session, "pwd", folder)


def test_continue_in_a_workspace_unpacked_from_an_archive(
    worker, page_for, make_user, settings, tmp_path
):
    user = make_user()
    session = imported_session(user)
    hostile = tmp_path / "hostile.tar.gz"
    with tarfile.open(hostile, "w:gz") as tar:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    good = tmp_path / "project.tar.gz"
    with tarfile.open(good, "w:gz") as tar:
        info = tarfile.TarInfo("src/hello-from-archive.txt")
        info.size = 6
        tar.addfile(info, io.BytesIO(b"hello\n"))
    name = f"unpacked-{uuid.uuid4().hex[:6]}"
    page = open_and_choose(
        page_for, user, session, "archive", name,
        fill=lambda p: p.set_input_files("#workspace-archive", str(hostile)),
    )  # fmt: skip
    expect(page.locator("#workspace-notice")).to_contain_text("refused")
    assert not (area_of(settings, user) / name).exists()
    page.set_input_files("#workspace-archive", str(good))
    page.click("#workspace-submit")
    folder = str(area_of(settings, user) / name)
    expect(page.locator("#workspace-current")).to_have_text(folder, timeout=15000)
    run_here(page, session, "cat src/hello-from-archive.txt && echo done-$((6*7))", "done-42")


def test_continue_in_a_clone_of_a_repository_on_the_server(worker, page_for, make_user, settings):
    user = make_user()
    session = imported_session(user)
    source = area_of(settings, user) / f"repo-{uuid.uuid4().hex[:6]}"
    source.mkdir()
    (source / "main.py").write_text("print('cloned')\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(source)}  # fmt: skip
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=source, env=env, check=True)
    name = f"clone-{uuid.uuid4().hex[:6]}"
    page = open_and_choose(
        page_for, user, session, "git", name,
        fill=lambda p: p.fill("#workspace-git", str(source)),
    )  # fmt: skip
    folder = str(area_of(settings, user) / name)
    expect(page.locator("#workspace-current")).to_have_text(folder, timeout=15000)
    run_here(page, session, "ls && git log --format=%s", "main.py")


def test_continue_in_the_sessions_own_folder(worker, page_for, make_user, settings):
    """pi recorded a folder that the server maps into the user's area, not made here yet
    (a synced home, say): its own folder is offered and made."""
    user = make_user()
    own = area_of(settings, user) / f"proj-{uuid.uuid4().hex[:6]}"
    session = imported_session(user, cwd=str(own))
    page = open_and_choose(page_for, user, session, "own", "", where=str(own))
    # The header's folder is shown from the start: wait for the choice itself to land.
    expect(page.locator("#workspace-problem")).to_have_count(0, timeout=15000)
    expect(page.locator("#workspace-current")).to_have_text(str(own), timeout=15000)
    assert own.is_dir()
    run_here(page, session, "pwd", str(own))


def test_continue_in_one_of_your_workspaces(worker, page_for, make_user, settings):
    user = make_user()
    existing = area_of(settings, user) / f"existing-{uuid.uuid4().hex[:6]}"
    existing.mkdir()
    (existing / "already-here.txt").write_text("x\n")
    session = imported_session(user)
    page = open_and_choose(
        page_for, user, session, "existing", "",
        fill=lambda p: p.select_option("#workspace-existing", str(existing)),
    )  # fmt: skip
    expect(page.locator("#workspace-current")).to_have_text(str(existing), timeout=15000)
    run_here(page, session, "ls", "already-here.txt")


def test_an_imported_session_asks_where_to_work_only_once_you_write(
    worker, page_for, make_user, settings
):
    """It opens on its messages, with no folder choice in the way; typing brings the choice,
    compact, just above the box; choosing keeps what was typed, and the message then runs
    there."""
    user = make_user()
    session = imported_session(user)
    page = page_for(user)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    expect(page.locator("#chat-transcript .chat-msg", has_text="hi")).to_be_in_viewport()
    box = page.locator("#workspace-box")
    expect(box).to_be_hidden()
    expect(page.locator("#workspace-problem")).to_be_hidden()
    page.type("#chat-input", "!pwd")
    expect(box).to_be_visible()
    expect(box).to_have_attribute("open", "")
    expect(page.locator("#workspace-problem")).to_contain_text(ELSEWHERE)
    shown = box.bounding_box()
    composer = page.locator("#chat-input").bounding_box()
    assert shown["height"] <= 200, shown
    assert 0 <= composer["y"] - (shown["y"] + shown["height"]) <= 120, (shown, composer)
    name = f"chosen-{uuid.uuid4().hex[:6]}"
    page.fill("#workspace-name", name)
    page.check('#workspace-form input[name="kind"][value="empty"]')
    page.click("#workspace-submit")
    folder = str(area_of(settings, user) / name)
    expect(page.locator("#workspace-current")).to_have_text(folder, timeout=15000)
    # The page reloaded on the choice: what was typed is still in the box.
    expect(page.locator("#chat-input")).to_have_value("!pwd")
    expect(page.locator("#workspace-problem")).to_have_count(0)
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    page.click("#chat-send")
    expect(page.locator("#chat-transcript")).to_contain_text(folder, timeout=30000)
    assert wait_run(session).status == "done"
    expect(page.locator("#chat-input")).to_have_value("")
