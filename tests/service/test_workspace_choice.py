"""Continue any session in a workspace you choose: its own folder where the server allows
it, one of yours, or a new one (empty, unpacked, cloned); the choice is a pi custom entry
and the prompt, the tools and the sandbox use its folder below it."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.selectors import paths, workspaces
from sessions_app.selectors.model_input import model_input
from sessions_app.services import chat, fork, jobs, workspace_choice
from sessions_app.services.importer import import_jsonl_stream
from tests.support.scripted_llm import text, tool_call
from tests.support.workspaces import area_of

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tasks_stay_in_process", "redis_ready", "fresh_workspace_root"),
]


def pi_file(cwd: str) -> bytes:
    lines = [
        {"type": "session", "version": 3, "id": "5a1e0000-0000-4000-8000-000000000001",
         "timestamp": "2026-11-30T10:00:00.000Z", "cwd": cwd},
        {"type": "message", "id": "aaaa0001", "parentId": None,
         "timestamp": "2026-11-30T10:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}},
        {"type": "message", "id": "aaaa0002", "parentId": "aaaa0001",
         "timestamp": "2026-11-30T10:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}],
                     "api": "openai-completions", "provider": "x", "model": "m",
                     "usage": None, "stopReason": "stop", "timestamp": 2}},
    ]  # fmt: skip
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


@pytest.fixture
def owner(make_user):
    return make_user()


def imported(owner, cwd="/Users/someone/code/pi-mono") -> Session:
    report = import_jsonl_stream(io.BytesIO(pi_file(cwd)), owner, filename="x.jsonl")
    session = report.session
    Session.objects.filter(pk=session.pk).update(model_profile="scripted")
    session.refresh_from_db()
    return session


def test_an_imported_session_is_offered_a_choice_instead_of_a_refusal(owner, settings, llm):
    session = imported(owner)
    with pytest.raises(chat.ChatError, match="Continue in") as refused:
        chat.send_message(session, owner, "go on")
    assert refused.value.code == "workspace"
    options = workspaces.options(session, owner)
    assert options.own is None and options.current_error
    folder = workspace_choice.continue_in(session, owner, "empty", name="fresh")
    assert folder == str(area_of(settings, owner) / "fresh")
    session.refresh_from_db()
    choice = session.leaf.payload
    assert choice["type"] == "custom" and choice["customType"] == "piweb.workspace"
    assert choice["data"] == {"cwd": folder, "kind": "empty", "by": owner.pk}
    # The prompt, the tools and the run use the new folder.
    assert f"Current working directory: {folder}" in model_input(session).system_prompt
    llm.push(tool_call("bash", {"command": "pwd > where.txt"}, call_id="c1"), text("done"))
    job = chat.send_message(session, owner, "where are you?")
    assert jobs.run_job(str(job.pk)) == "done"
    assert Path(folder, "where.txt").read_text().strip() == folder
    assert "aaaa0002" in [m.get("id") for m in paths.load_path(session)]


def test_the_choice_holds_only_below_its_entry(owner):
    session = imported(owner)
    folder = workspace_choice.continue_in(session, owner, "empty", name="below")
    session.refresh_from_db()
    assert workspaces.session_workspace(session).cwd == folder
    assert workspaces.session_workspace(session, "aaaa0002").cwd == "/Users/someone/code/pi-mono"
    assert workspaces.session_workspace(session, None).cwd == "/Users/someone/code/pi-mono"


def test_one_of_your_workspaces(owner, settings):
    existing = area_of(settings, owner) / "proj"
    existing.mkdir()
    session = imported(owner)
    assert str(existing) in workspaces.options(session, owner).existing
    assert workspace_choice.continue_in(session, owner, "existing", path=str(existing)) == str(
        existing
    )
    session.refresh_from_db()
    assert workspaces.session_cwd(session) == str(existing)


def test_another_users_folder_is_never_a_choice(owner, make_user, settings):
    other = make_user()
    theirs = area_of(settings, other) / "secret"
    theirs.mkdir()
    session = imported(owner)
    with pytest.raises(workspace_choice.ChoiceError):
        workspace_choice.continue_in(session, owner, "existing", path=str(theirs))
    with pytest.raises(workspace_choice.ChoiceError):
        workspace_choice.continue_in(session, owner, "own")


def test_single_user_mode_continues_in_the_sessions_own_folder(owner, settings, tmp_path):
    home = tmp_path / "home"
    project = home / "code" / "proj"
    project.mkdir(parents=True)
    settings.PIWEB_WORKSPACE_ROOTS = [home.resolve()]
    settings.PIWEB_WORKSPACE_MODE = "single-user"
    session = imported(owner, cwd=str(project))
    # Usable as it is: the chat does not refuse it.
    assert workspaces.session_cwd(session) == str(project.resolve())
    assert workspaces.options(session, owner).own == str(project.resolve())
    workspace_choice.continue_in(session, owner, "own")
    session.refresh_from_db()
    assert session.leaf.payload["data"]["kind"] == "own"


def test_multi_user_mode_keeps_the_per_user_folder(owner, settings, tmp_path):
    root = Path(settings.PIWEB_WORKSPACE_ROOTS[0])
    project = root / "shared-proj"
    project.mkdir()
    session = imported(owner, cwd=str(project))
    assert workspaces.options(session, owner).own is None


def _repo(path: Path) -> None:
    path.mkdir(parents=True)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(path)}  # fmt: skip
    (path / "main.py").write_text("print('hi')\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True)


def test_a_new_workspace_cloned_from_a_repository_you_may_read(owner, settings, make_user):
    source = area_of(settings, owner) / "repos" / "tool"
    _repo(source)
    session = imported(owner)
    folder = workspace_choice.continue_in(
        session, owner, "git", name="tool-copy", git_source=str(source)
    )
    assert Path(folder, "main.py").read_text() == "print('hi')\n"
    assert Path(folder, ".git").is_dir()
    # --no-hardlinks: the objects are copies.
    objects = [p for p in Path(folder, ".git", "objects").rglob("*") if p.is_file()]
    assert objects and all(p.stat().st_nlink == 1 for p in objects)
    other = make_user()
    theirs = area_of(settings, other) / "repo"
    _repo(theirs)
    with pytest.raises(workspace_choice.ChoiceError, match="outside your workspaces"):
        workspace_choice.continue_in(session, owner, "git", name="x", git_source=str(theirs))
    assert not (area_of(settings, owner) / "x").exists()


def test_a_fork_starts_in_the_workspace_of_its_fork_point(owner):
    session = imported(owner)
    folder = workspace_choice.continue_in(session, owner, "empty", name="forked")
    session.refresh_from_db()
    new = fork.fork_session(session, session.leaf_pi_id, "path", owner)
    assert new.cwd == folder
    assert workspaces.session_cwd(new) == folder
    # A fork can choose its own.
    workspace_choice.continue_in(new, owner, "empty", name="fork-own")
    new.refresh_from_db()
    assert workspaces.session_cwd(new).endswith("/fork-own")
    session.refresh_from_db()
    assert workspaces.session_cwd(session) == folder


def test_the_tree_names_the_folder_of_a_choice(owner):
    session = imported(owner)
    folder = workspace_choice.continue_in(session, owner, "empty", name="named")
    session.refresh_from_db()
    assert session.leaf.preview == f"continue in {folder}"
