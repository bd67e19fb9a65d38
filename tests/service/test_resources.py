"""Issue 23's disk and memory findings, replayed the way they were found, scaled down with
small settings: a command that prints gigabytes (`head -c 1500M /dev/zero`), a workspace
filled past its quota, a disk below its reserve, a memory hog of several processes, and
the agent's read/edit tools on a huge file. Everything runs through the real bubblewrap
sandbox and the real services."""

import os
import time
from pathlib import Path

import pytest
from django.utils import timezone

from sessions_app.agent.sandbox import PidsCgroup
from sessions_app.agent.shell import CommandRefused
from sessions_app.core.truncate import CAPPED_HEADER_BYTES
from sessions_app.models import WorkspaceUsage
from sessions_app.services import chat, resources, sandboxing
from sessions_app.services.jobs import workspace_measure
from tests.support.sandboxed import sh, tool

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("bwrap_required")]
MB = 1024 * 1024


@pytest.fixture(autouse=True)
def fresh_roots(settings, tmp_path):
    root = (tmp_path / "workspaces").resolve()
    root.mkdir()
    settings.PIWEB_WORKSPACE_ROOTS = [root]
    settings.PIWEB_ARTIFACT_DIR = tmp_path / "artifacts"
    return root


@pytest.fixture
def owner(make_user):
    return make_user()


@pytest.fixture
def session(owner, settings):
    from sessions_app.services import sessions

    cwd = Path(settings.PIWEB_WORKSPACE_ROOTS[0]) / str(owner.pk) / "proj"
    cwd.mkdir(parents=True)
    return sessions.create_session(owner=owner, cwd=str(cwd))


# --- the full-output file ----------------------------------------------------------------


def test_full_output_file_keeps_only_the_tail_past_its_cap(session, settings):
    """Was: 1.5 GB written outside the sandbox by one `head -c 1500M /dev/zero`."""
    settings.PIWEB_FULL_OUTPUT_MAX_MB = 2
    outcome, _ = sh(session, "head -c 40M /dev/zero; seq 1 300000")
    path = Path(outcome.result.full_output_path)
    size = path.stat().st_size
    assert size <= 2 * MB + CAPPED_HEADER_BYTES
    with path.open("rb") as fh:
        header = fh.readline()
        first_kept = fh.readline()
    assert header.startswith(b"[piweb: this file keeps only the end of the output: the first ")
    assert b"were dropped to keep it under its 2.0MB cap]" in header
    assert int(first_kept) > 1  # the kept part starts on a whole line of the seq
    with path.open("rb") as fh:
        fh.seek(-7, os.SEEK_END)
        assert fh.read() == b"300000\n"
    notice = outcome.result.notice
    assert "Full output: " in notice and "that file keeps only the last" in notice
    assert "the full-output cap is 2.0MB" in notice
    # The agent's bash tool says so too.
    result = tool(session, "bash", {"command": "head -c 20M /dev/zero"})
    assert "the full-output cap is 2.0MB" in result.text
    full = Path(result.details["fullOutputPath"])
    assert full.stat().st_size <= 2 * MB + CAPPED_HEADER_BYTES


def test_under_the_cap_the_full_output_file_is_whole(session, settings):
    settings.PIWEB_FULL_OUTPUT_MAX_MB = 2
    outcome, _ = sh(session, "seq 1 100000")
    path = Path(outcome.result.full_output_path)
    assert path.read_bytes() == b"".join(b"%d\n" % i for i in range(1, 100001))
    assert "keeps only" not in outcome.result.notice


# --- workspace quota ---------------------------------------------------------------------


def test_a_user_over_quota_is_refused_with_how_much_to_delete(session, owner, settings):
    """Was: 3 GB written into a workspace with no limit."""
    settings.PIWEB_WORKSPACE_QUOTA_MB = 5
    outcome, text = sh(session, "head -c 8M /dev/urandom > big.bin && echo written")
    assert text.strip() == "written"
    usage = workspace_measure.measure_workspace(owner.pk)  # what the background job runs
    assert 8 * MB <= usage.bytes < 9 * MB
    assert WorkspaceUsage.objects.get(user=owner).bytes == usage.bytes
    over = (usage.bytes - 5 * MB) / MB
    with pytest.raises(CommandRefused) as refused:
        sh(session, "echo more > more.txt")
    message = str(refused.value)
    assert "over your quota of 5.0MB" in message
    assert f"delete at least {over:.1f}MB" in message
    assert not (Path(session.cwd) / "more.txt").exists()
    # The agent's bash tool and the chat's `!cmd` are refused the same way.
    result = tool(session, "bash", {"command": "echo more > more.txt"})
    assert result.is_error and "over your quota" in result.text
    with pytest.raises(chat.ChatError) as sent:
        chat.send_message(session, owner, "!echo more > more.txt")
    assert sent.value.code == "resources" and "delete at least" in str(sent.value)
    # Deleting still runs; measured again, the user is under quota and commands run.
    outcome, text = sh(session, "rm big.bin")
    assert outcome.exit_code == 0
    workspace_measure.measure_workspace(owner.pk)
    outcome, text = sh(session, "echo fine")
    assert text == "fine\n"


def over_quota(user, settings) -> None:
    settings.PIWEB_WORKSPACE_QUOTA_MB = 5
    WorkspaceUsage.objects.update_or_create(
        user=user, defaults={"bytes": 30 * MB, "measured_at": timezone.now()}
    )


def test_the_write_and_edit_tools_are_refused_over_quota_like_bash(session, owner, settings):
    """Issue #33, E: only bash was checked; the agent's file tools wrote on."""
    (Path(session.cwd) / "notes.txt").write_text("old\n")
    over_quota(owner, settings)
    written = tool(session, "write", {"path": "big.txt", "content": "x" * 1000})
    assert written.is_error and "over your quota" in written.text
    assert not (Path(session.cwd) / "big.txt").exists()
    edits = [{"oldText": "old", "newText": "new" * 1000}]
    edited = tool(session, "edit", {"path": "notes.txt", "edits": edits})
    assert edited.is_error and "over your quota" in edited.text
    assert (Path(session.cwd) / "notes.txt").read_text() == "old\n"


def test_continuing_a_shared_session_in_your_folder_counts_against_your_quota(settings, make_user):
    """Issue #33, E: alice, over quota, continued bob's shared session in her folder and
    wrote on, while bob's usage was the one measured."""
    from sessions_app.services import sessions, workspace_choice
    from tests.support.web import share

    alice, bob = make_user(), make_user()
    bobs = Path(settings.PIWEB_WORKSPACE_ROOTS[0]) / str(bob.pk) / "proj"
    bobs.mkdir(parents=True)
    shared = sessions.create_session(owner=bob, cwd=str(bobs))
    share(shared, alice, "editor")
    folder = workspace_choice.continue_in(shared, alice, "empty", name="hers")
    shared.refresh_from_db()
    assert resources.charged_user(shared) == alice.pk
    over_quota(alice, settings)
    with pytest.raises(CommandRefused, match="over your quota"):
        sh(shared, "head -c 1M /dev/zero > big.bin")
    written = tool(shared, "write", {"path": "big.txt", "content": "x"})
    assert written.is_error and "over your quota" in written.text
    assert os.listdir(folder) == []
    # bob, under quota in his own folder, works on; his usage is his own.
    own = sessions.create_session(owner=bob, cwd=str(bobs))
    outcome, text = sh(own, "echo fine")
    assert text == "fine\n"


def test_only_commands_that_delete_or_look_pass_over_quota():
    for command in ("rm -rf build", "du -sh *", "ls -la", "find . -name '*.o' -delete"):
        assert resources.is_cleanup(command), command
    for command in (
        "rm x; yes > y", "rm x && cp a b", "ls > list", "rm $(cat f)", "find . -exec cp {} x ;",
        "echo hi", "rmx", "ls `yes`",
    ):  # fmt: skip
        assert not resources.is_cleanup(command), command


# --- free-space reserve ------------------------------------------------------------------


def _free_mb() -> float:
    return resources.free_bytes(os.fspath(resources.watched_paths()[0])) / MB


def test_below_the_reserve_new_commands_are_refused(session, settings, owner):
    settings.PIWEB_DISK_RESERVE_MB = _free_mb() + 10_000
    with pytest.raises(CommandRefused, match="kept in reserve for the database and Redis"):
        sh(session, "echo should-not-run")
    result = tool(session, "bash", {"command": "echo should-not-run"})
    assert result.is_error and "kept in reserve" in result.text
    with pytest.raises(chat.ChatError, match="kept in reserve"):
        chat.send_message(session, owner, "!echo should-not-run")


def test_a_running_command_is_stopped_when_the_disk_falls_below_the_reserve(session, settings):
    """`!yes`-style filling: the command takes the disk below the reserve and is stopped."""
    settings.PIWEB_DISK_RESERVE_MB = _free_mb() - 150
    started = time.monotonic()
    try:
        outcome, text = sh(session, "fallocate -l 600M filler && echo filled; sleep 60")
    finally:
        (Path(session.cwd) / "filler").unlink(missing_ok=True)
    assert time.monotonic() - started < 30
    assert "filled" in text
    assert outcome.aborted and outcome.stopped
    assert outcome.stopped.startswith("Stopped: The disk that holds piweb's data has only")
    assert outcome.stopped in outcome.limit_notices


# --- memory ------------------------------------------------------------------------------

HOG = (
    "for i in 1 2 3 4; do python3 -c 'import time; x = bytearray(100 * 1024 * 1024); "
    "time.sleep(8)' & done; wait; echo finished"
)


def test_a_memory_hog_of_several_processes_is_held_to_the_total(session, settings):
    """Was: one command ran 4 x 900 MB under a 3 GB per-process limit. Here 4 x 100 MB
    under a 256 MB total (the memory cgroup where the worker can make one)."""
    settings.PIWEB_SANDBOX_TOTAL_MEMORY_MB = 256
    result = tool(session, "bash", {"command": HOG, "timeout": 60})
    assert "all processes of a command together may use at most 256 MB" in result.text
    if PidsCgroup.available() and PidsCgroup.memory_available():
        assert "Killed" in result.text or "finished" in result.text


def test_without_a_memory_cgroup_the_worker_stops_the_hog(session, settings, monkeypatch):
    monkeypatch.setattr(PidsCgroup, "_memory_parent", None)
    settings.PIWEB_SANDBOX_TOTAL_MEMORY_MB = 256
    started = time.monotonic()
    outcome, text = sh(session, HOG)
    assert time.monotonic() - started < 8  # stopped, not left to sleep
    assert outcome.aborted and "finished" not in text
    assert outcome.stopped and "at most 256 MB of memory" in outcome.stopped


def test_processes_under_the_total_run_normally(session, settings):
    settings.PIWEB_SANDBOX_TOTAL_MEMORY_MB = 512
    result = tool(session, "bash", {"command": HOG.replace("100 *", "20 *").replace("8", "1")})
    assert result.text.strip() == "finished" and not result.is_error


# --- the agent's read and edit tools -----------------------------------------------------


def test_read_and_edit_refuse_files_over_the_size_setting(session, settings):
    """Was: the agent's edit of a 400 MB file held the worker at 920 MB."""
    settings.PIWEB_TOOL_MAX_FILE_MB = 1
    big = Path(session.cwd) / "big.txt"
    big.write_bytes(b"needle\n" + b"x" * (3 * MB))
    before = big.stat()
    for name, args in (
        ("edit", {"path": "big.txt", "oldText": "needle", "newText": "pin"}),
        ("read", {"path": "big.txt"}),
    ):
        result = tool(session, name, args)
        assert result.is_error
        assert f"big.txt is 3.0MB, over the 1.0MB the {name} tool opens" in result.text
        assert "Use bash to work on parts of it" in result.text
    assert big.stat().st_mtime_ns == before.st_mtime_ns
    small = Path(session.cwd) / "small.txt"
    small.write_text("needle\n")
    assert not tool(
        session, "edit", {"path": "small.txt", "oldText": "needle", "newText": "pin"}
    ).is_error
    assert small.read_text() == "pin\n"


def test_the_run_command_status_line_names_the_total(settings):
    settings.PIWEB_SANDBOX_TOTAL_MEMORY_MB = 777
    assert "777 MB of memory in all" in sandboxing.status()


@pytest.mark.usefixtures("own_snapshot_dir")
def test_shadow_repositories_count_in_their_workspaces_owners_usage(session, owner):
    """Issue #33, item 9: snapshots of a workspace were free of the quota."""
    from sessions_app.selectors.changes import repo_for

    for i in range(10):  # each under the snapshot's file size limit
        (Path(session.cwd) / f"data{i}.bin").write_bytes(os.urandom(MB // 5))
    without = workspace_measure.measure_workspace(owner.pk).bytes
    repo_for(session).snapshot()  # the data is now in the shadow repository too
    with_repo = workspace_measure.measure_workspace(owner.pk).bytes
    assert with_repo - without >= 2 * MB * 0.9
