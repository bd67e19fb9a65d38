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
from sessions_app.selectors import changes as changes_selectors
from sessions_app.selectors import paths, workspaces
from sessions_app.selectors.model_input import model_input
from sessions_app.services import changes, chat, fork, jobs, sandboxing, sessions, workspace_choice
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


def _clone_of_a_gitdir_file(session, owner, settings, gitdir: str, name: str):
    """Issue #33, B: a folder of the user's area whose ``.git`` is a file naming another
    repository, cloned through "Continue in…"; (the new folder or None, the error)."""
    bait = area_of(settings, owner) / f"bait-{name}"
    bait.mkdir(parents=True)
    (bait / ".git").write_text(f"gitdir: {gitdir}\n")
    try:
        folder = workspace_choice.continue_in(
            session, owner, "git", name=f"copy-{name}", git_source=str(bait)
        )
    except workspace_choice.ChoiceError as exc:
        return None, str(exc)
    return Path(folder), ""


def _everything_under(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.mark.usefixtures("own_snapshot_dir", "bwrap_required")
def test_a_gitdir_file_pointing_at_another_users_shadow_repository_clones_nothing_of_theirs(
    owner, settings, make_user
):
    bob = make_user()
    bobs = area_of(settings, bob) / "work"
    bobs.mkdir()
    (bobs / "plans.txt").write_text("BOBS-PRIVATE-PLANS-31337\n")
    bob_session = sessions.create_session(owner=bob, cwd=str(bobs))
    assert changes.begin(bob_session)  # bob's shadow repository holds his file
    shadow = changes_selectors.repo_for(bob_session).git_dir

    folder, error = _clone_of_a_gitdir_file(imported(owner), owner, settings, shadow, "bob")
    assert folder is None and "git clone failed" in error
    assert b"BOBS-PRIVATE-PLANS" not in _everything_under(area_of(settings, owner))


@pytest.mark.usefixtures("bwrap_required")
def test_a_gitdir_file_pointing_at_piwebs_own_repository_clones_none_of_its_source(owner, settings):
    own = subprocess.run(
        ["git", "rev-parse", "--absolute-git-dir"], cwd=settings.BASE_DIR,
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    folder, error = _clone_of_a_gitdir_file(imported(owner), owner, settings, own, "piweb")
    assert folder is None and "git clone failed" in error
    everything = _everything_under(area_of(settings, owner))
    assert b"def continue_in" not in everything and b"DJANGO_SETTINGS_MODULE" not in everything


@pytest.mark.usefixtures("bwrap_required")
def test_a_repository_the_sandbox_made_is_cloned_and_gits_error_is_shown_as_it_is(owner, settings):
    """The "dubious ownership" of a root worker: the repository belongs to the commands'
    account, and the clone (as that account, in the sandbox) takes it as the user's."""
    work = area_of(settings, owner) / "work"
    work.mkdir()
    session = sessions.create_session(owner=owner, cwd=str(work))
    outcome = sandboxing.run_command(
        session,
        "git init -q made && cd made && echo made-inside > f.txt && git add f.txt "
        "&& git -c user.name=u -c user.email=u@x commit -qm one",
    )
    assert outcome.exit_code == 0, outcome.result.truncation.content
    folder = workspace_choice.continue_in(
        session, owner, "git", name="made-copy", git_source=str(work / "made")
    )
    assert Path(folder, "f.txt").read_text() == "made-inside\n"

    (work / "broken").mkdir()
    (work / "broken" / ".git").write_text("gitdir: /nowhere/at/all\n")
    with pytest.raises(workspace_choice.ChoiceError) as refused:
        workspace_choice.continue_in(
            session, owner, "git", name="broken-copy", git_source=str(work / "broken")
        )
    assert "fatal: not a git repository: /nowhere/at/all" in str(refused.value)


def test_over_quota_nothing_is_cloned(owner, settings):
    """Issue #33, E: a clone never checked the quota."""
    from django.utils import timezone

    from sessions_app.models import WorkspaceUsage

    source = area_of(settings, owner) / "repos" / "tool"
    _repo(source)
    settings.PIWEB_WORKSPACE_QUOTA_MB = 5
    WorkspaceUsage.objects.update_or_create(
        user=owner, defaults={"bytes": 50 << 20, "measured_at": timezone.now()}
    )
    with pytest.raises(workspace_choice.ChoiceError, match="over your quota") as refused:
        workspace_choice.continue_in(
            imported(owner), owner, "git", name="copy", git_source=str(source)
        )
    assert refused.value.status == 507
    assert not (area_of(settings, owner) / "copy").exists()


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
