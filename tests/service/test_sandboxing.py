"""services/sandboxing.py: every command of a session runs in the sandbox the settings
describe, in the session's workspace, with the session's environment; without a usable
bubblewrap (and the sandbox not switched off) every command is refused with the fix.

The real bubblewrap runs the commands (as in test_sandbox.py, which tests the sandbox
itself)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessions_app.agent.paths import WorkspaceError
from sessions_app.agent.sandbox import SandboxConfig
from sessions_app.services import chat, sandboxing, sessions
from tests.support.sandboxed import sh, tool

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("bwrap_required")]


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
def session(owner, fresh_roots):
    cwd = fresh_roots / str(owner.pk) / "proj"
    cwd.mkdir(parents=True)
    return sessions.create_session(owner=owner, cwd=str(cwd))


# --- the configuration ------------------------------------------------------------------


def test_the_config_is_the_settings(settings):
    settings.PIWEB_SANDBOX_BWRAP = "/opt/bwrap"
    settings.PIWEB_SANDBOX_NETWORK = True
    settings.PIWEB_SANDBOX_CPU_SECONDS = 11
    settings.PIWEB_SANDBOX_MEMORY_MB = 222
    settings.PIWEB_SANDBOX_TOTAL_MEMORY_MB = 333
    settings.PIWEB_SANDBOX_MAX_PROCESSES = 44
    settings.PIWEB_SANDBOX_FILE_SIZE_MB = 55
    settings.PIWEB_SANDBOX_TMP_MB = 66
    settings.PIWEB_SANDBOX_HOST_UID = 64123
    assert sandboxing.config() == SandboxConfig(
        mode="bwrap",
        bwrap="/opt/bwrap",
        network=True,
        cpu_seconds=11,
        memory_mb=222,
        total_memory_mb=333,
        max_processes=44,
        file_size_mb=55,
        tmp_size_mb=66,
        stage_dir=os.path.join(os.fspath(settings.VAR_DIR), "sandbox"),
        host_uid=64123,
    )
    settings.PIWEB_SANDBOX = "off"
    assert not sandboxing.config().enabled


def test_check_available_passes_with_bubblewrap_and_refuses_without(settings):
    sandboxing.check_available()  # the real bwrap of this machine
    settings.PIWEB_SANDBOX_BWRAP = "/nonexistent/bwrap"
    with pytest.raises(sandboxing.SandboxUnavailable, match="'/nonexistent/bwrap' was not found"):
        sandboxing.check_available()
    settings.PIWEB_SANDBOX = "off"
    sandboxing.check_available()  # switched off: nothing to refuse


def test_the_status_line_names_the_limits_of_the_settings(settings):
    settings.PIWEB_SANDBOX_TOTAL_MEMORY_MB = 4321
    assert "4321 MB of memory in all" in sandboxing.status()


# --- refusing without bwrap (moved from test_sandbox.py) ---------------------------------


def test_missing_bwrap_refuses_with_a_fix(session, settings, owner):
    settings.PIWEB_SANDBOX_BWRAP = "/nonexistent/bwrap"
    with pytest.raises(sandboxing.SandboxUnavailable, match="apt-get install bubblewrap"):
        sh(session, "echo should-not-run")
    result = tool(session, "bash", {"command": "echo should-not-run"})
    assert result.is_error and "apt-get install bubblewrap" in result.text
    with pytest.raises(chat.ChatError) as refused:
        chat.send_message(session, owner, "!echo should-not-run")
    assert refused.value.code == "sandbox"
    assert "bwrap NOT FOUND" in sandboxing.status()


def test_too_old_bwrap_refuses_with_a_reason(session, settings, tmp_path):
    old = tmp_path / "old-bwrap"
    old.write_text("#!/bin/sh\necho 'bubblewrap 0.6.1'\n")
    old.chmod(0o755)
    settings.PIWEB_SANDBOX_BWRAP = str(old)
    with pytest.raises(sandboxing.SandboxUnavailable, match="bubblewrap 0.6.1, and piweb needs"):
        sh(session, "echo should-not-run")
    assert "UNUSABLE" in sandboxing.status()


def test_sandbox_off_says_so_and_runs_unsandboxed(session, settings):
    settings.PIWEB_SANDBOX = "off"
    assert "single-user machine" in sandboxing.status()
    outcome, text = sh(session, "id -u")
    assert text.strip() == str(os.getuid())


def test_a_refused_command_leaves_nothing_in_the_workspace(session, settings):
    settings.PIWEB_SANDBOX_BWRAP = "/nonexistent/bwrap"
    with pytest.raises(sandboxing.SandboxUnavailable):
        sh(session, "touch made.txt")
    assert not (Path(session.cwd) / "made.txt").exists()


# --- what a command gets -----------------------------------------------------------------


def test_a_command_runs_in_the_sessions_workspace_with_its_id(session):
    outcome, text = sh(session, 'echo "$PIWEB_SESSION_ID" > seen.txt && cat seen.txt')
    assert outcome.exit_code == 0, text
    assert text.strip() == session.pi_id
    assert (Path(session.cwd) / "seen.txt").read_text().strip() == session.pi_id


def test_a_command_gets_nothing_else_of_the_workers_environment(session, monkeypatch):
    monkeypatch.setenv("PIWEB_TEST_LEAK", "leaked-value")
    outcome, text = sh(session, 'echo "[$PIWEB_TEST_LEAK]"')
    assert outcome.exit_code == 0 and text.strip() == "[]", text


def test_the_user_command_timeout_comes_from_the_settings(session, settings):
    settings.PIWEB_USER_BASH_TIMEOUT = 1
    outcome, _ = sh(session, "sleep 30")
    assert outcome.timed_out and outcome.timeout == 1 and outcome.duration < 20
    outcome, _ = sh(session, "sleep 2", timeout=10)  # the caller's own timeout wins
    assert not outcome.timed_out and outcome.exit_code == 0


def test_the_tools_get_the_same_workspace_environment_and_sandbox(session, settings):
    settings.PIWEB_SANDBOX_CPU_SECONDS = 77
    context = sandboxing.tool_context(session)
    assert context.sandbox == sandboxing.config() and context.sandbox.cpu_seconds == 77
    assert context.bash_env == {"PIWEB_SESSION_ID": session.pi_id}
    assert os.path.realpath(context.workspace.cwd) == os.path.realpath(session.cwd)
    written = tool(session, "write", {"path": "by-tool.txt", "content": "from the tool\n"})
    assert not written.is_error
    assert (Path(session.cwd) / "by-tool.txt").read_text() == "from the tool\n"
    result = tool(session, "bash", {"command": 'echo "$PIWEB_SESSION_ID"'})
    assert result.text.strip() == session.pi_id


def test_a_session_whose_workspace_is_outside_the_users_area_runs_nothing(
    session, owner, make_user, fresh_roots
):
    other = make_user("someone-else")
    theirs = fresh_roots / str(other.pk) / "theirs"
    theirs.mkdir(parents=True)
    (theirs / "secret.txt").write_text("theirs\n")
    session.cwd = str(theirs)
    session.save(update_fields=["cwd"])
    with pytest.raises(WorkspaceError):
        sh(session, "touch stolen.txt")
    with pytest.raises(WorkspaceError):
        sandboxing.tool_context(session)
    assert not (theirs / "stolen.txt").exists()
