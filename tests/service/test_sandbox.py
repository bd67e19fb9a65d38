"""The escape suite: a session of an ordinary (non-staff) user tries to leave its workspace.

Every command goes through the real bubblewrap sandbox and every file tool through the
real descriptor-based opens; each attack must fail without leaking anything, and
ordinary work (files, python3, git, node/npm) must still succeed, leaving files owned
by the worker's user in the workspace on the host.
"""

import io
import json
import os
import shutil
import socket
import threading
import time
from contextlib import redirect_stdout
from pathlib import Path

import psutil
import pytest
from django.core.management import call_command

from sessions_app.agent.signals import AbortSignal
from sessions_app.agent.tools import execute_tool
from sessions_app.services import sandboxing, sessions
from tests.support.agent_runs import host_processes_with
from tests.support.sandboxed import sh, tool
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("bwrap_required")]

CANARY = "canary-d41d8cd98f00b204"


@pytest.fixture(autouse=True)
def fresh_roots(settings, tmp_path):
    """Workspaces of this test's own, and a secret next to them (outside every workspace)."""
    root = (tmp_path / "workspaces").resolve()
    root.mkdir()
    settings.PIWEB_WORKSPACE_ROOTS = [root]
    settings.PIWEB_ARTIFACT_DIR = tmp_path / "artifacts"
    return root


@pytest.fixture
def owner(make_user):
    user = make_user()
    assert not user.is_staff and not user.is_superuser
    return user


def session_of(user, name="proj"):
    from django.conf import settings

    cwd = Path(settings.PIWEB_WORKSPACE_ROOTS[0]) / str(user.pk) / name
    cwd.mkdir(parents=True, exist_ok=True)
    return sessions.create_session(owner=user, cwd=str(cwd))


@pytest.fixture
def session(owner):
    return session_of(owner)


@pytest.fixture
def ws(session):
    return Path(session.cwd)


@pytest.fixture
def outside(tmp_path):
    """Files outside every workspace, with content that must never show up."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text(f"{CANARY}-file\n")
    (directory / "nested").mkdir()
    (directory / "nested" / "deep.txt").write_text(f"{CANARY}-deep\n")
    return directory


# --- who and where ---------------------------------------------------------------------------


def test_unprivileged_uid_minimal_env_and_nothing_of_the_host(session, ws, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", CANARY)
    monkeypatch.setenv("PIWEB_LLM_API_KEY", CANARY)
    outcome, text = sh(
        session, "id -u; id -g; pwd; env | sort; ls /; ls /home /root /var /run /srv 2>&1"
    )
    lines = text.splitlines()
    assert lines[0] == "1000" and lines[1] == "1000"
    assert lines[2] == str(ws)  # the workspace at its real path
    names = {line.split("=", 1)[0] for line in lines if "=" in line}
    assert names <= {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "PWD", "PAGER",
        "GIT_PAGER", "EMAIL", "PIWEB_SESSION_ID", "SHLVL", "_",
    }  # fmt: skip
    for secret_name in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "PIWEB_LLM_API_KEY"):
        assert secret_name not in names
    assert CANARY not in text
    for gone in ("/home", "/root", "/var", "/run", "/srv"):
        assert f"cannot access '{gone}': No such file or directory" in text


def test_secret_key_database_and_var_dir_are_invisible(session, settings):
    var = os.fspath(settings.VAR_DIR)
    key_file = os.path.join(var, "secret_key")
    assert os.path.exists(key_file)  # it is there on the host
    key = Path(key_file).read_text().strip()
    db = settings.DATABASES["default"]["NAME"]
    outcome, text = sh(session, f"cat {key_file}; ls -la {var}; cat {db}; ls {var}/artifacts")
    assert outcome.exit_code != 0
    assert key not in text
    assert text.count("No such file or directory") >= 3
    # The file tools refuse it too.
    result = tool(session, "read", {"path": key_file})
    assert result.is_error and "outside the workspace" in result.text and key not in result.text


def test_another_users_workspace_is_invisible(session, make_user):
    other = session_of(make_user(), "theirs")
    Path(other.cwd, "private.txt").write_text(f"{CANARY}-other\n")
    outcome, text = sh(
        session, f"ls {other.cwd}; cat {other.cwd}/private.txt; ls {Path(other.cwd).parent}"
    )
    assert outcome.exit_code != 0 and CANARY not in text
    assert "No such file or directory" in text
    # Nor the owner's own other sessions' folders: only this session's cwd is mounted.
    sibling = Path(session.cwd).parent / "sibling"
    sibling.mkdir()
    (sibling / "x.txt").write_text(CANARY)
    outcome, text = sh(session, f"cat {sibling}/x.txt")
    assert CANARY not in text and outcome.exit_code != 0


def test_worker_environ_and_processes_are_invisible(session, monkeypatch):
    monkeypatch.setenv("PIWEB_TEST_CANARY", CANARY)
    outcome, text = sh(
        session,
        f"cat /proc/{os.getpid()}/environ; cat /proc/1/environ /proc/*/environ 2>/dev/null "
        "| tr '\\0' '\\n'; ls /proc | grep -c '^[0-9]'",
    )
    assert CANARY not in text
    assert f"/proc/{os.getpid()}/environ: No such file or directory" in text
    assert int(text.strip().splitlines()[-1]) < 10  # only the sandbox's own few processes


# --- network ---------------------------------------------------------------------------------

CONNECT = (
    "python3 - <<'EOF'\n"
    "import socket, sys\n"
    "for target in sys.argv[1:] or {targets!r}:\n"
    "    family = socket.AF_UNIX if target.startswith('/') else socket.AF_INET\n"
    "    s = socket.socket(family, socket.SOCK_STREAM)\n"
    "    s.settimeout(3)\n"
    "    try:\n"
    "        s.connect(target if family == socket.AF_UNIX else (target.split(':')[0], int(target.split(':')[1])))\n"
    "        print('CONNECTED', target)\n"
    "    except OSError as exc:\n"
    "        print('REFUSED', target, exc.__class__.__name__)\n"
    "EOF"
)


@pytest.fixture
def listeners(tmp_path):
    """A TCP service on the host's loopback and a unix socket outside the workspace: both
    reachable from the host (checked), so a refusal inside proves the sandbox."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    unix_path = str(tmp_path / "service.sock")
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(unix_path)
    unix.listen(8)
    socket.create_connection(tcp.getsockname(), 2).close()
    probe = socket.socket(socket.AF_UNIX)
    probe.connect(unix_path)
    probe.close()
    yield f"127.0.0.1:{tcp.getsockname()[1]}", unix_path
    tcp.close()
    unix.close()


@pytest.mark.embedded
def test_postgres_redis_daphne_and_unix_sockets_are_unreachable(session, settings, listeners):
    tcp_service, unix_service = listeners
    targets = ["127.0.0.1:5432", "127.0.0.1:6379", tcp_service, unix_service]
    if settings.USES_EMBEDDED_REDIS:
        targets.append(os.fspath(settings.EMBEDDED_REDIS_SOCKET))
    outcome, text = sh(session, CONNECT.format(targets=targets))
    assert outcome.exit_code == 0, text
    assert "CONNECTED" not in text
    assert text.count("REFUSED") == len(targets)


def test_network_setting_on_reaches_the_host_as_the_readme_warns(session, settings, listeners):
    tcp_service, _ = listeners
    settings.PIWEB_SANDBOX_NETWORK = True
    outcome, text = sh(session, CONNECT.format(targets=[tcp_service]))
    assert f"CONNECTED {tcp_service}" in text
    settings.PIWEB_SANDBOX_NETWORK = False
    outcome, text = sh(session, CONNECT.format(targets=[tcp_service]))
    assert f"REFUSED {tcp_service}" in text


# --- writing ---------------------------------------------------------------------------------


def test_writing_outside_the_workspace_fails(session, ws, outside, make_user):
    other = session_of(make_user(), "theirs")
    marker = f"escape-{os.urandom(4).hex()}"
    outcome, text = sh(
        session,
        f"echo x > /usr/{marker}; echo x > /etc/{marker}; echo x > /{marker}; "
        f"echo x > {outside}/{marker}; echo x > {other.cwd}/{marker}; "
        f"echo x > /tmp/{marker} && echo private-tmp-ok; mkdir -p /var/{marker}",
    )
    assert "private-tmp-ok" in text
    for place in ("/usr", "/etc", "/", str(outside), other.cwd, "/tmp", "/var"):
        assert not os.path.exists(os.path.join(place, marker)), place
    assert "Read-only file system" in text


# --- processes ---------------------------------------------------------------------------------


def test_no_background_process_survives_the_command(session):
    marker = "77.7071"
    outcome, text = sh(
        session, f"(setsid nohup sleep {marker} >/dev/null 2>&1 &); sleep {marker} & echo started"
    )
    assert "started" in text and outcome.exit_code == 0
    assert wait_until(lambda: not host_processes_with(marker)), "a background process survived"


def test_stop_kills_the_whole_sandbox(session):
    marker = "78.8082"
    abort = AbortSignal()
    threading.Timer(1.5, abort.trigger).start()
    started = time.monotonic()
    outcome, text = sh(
        session,
        f"(setsid sleep {marker} &); sleep {marker} & echo started; wait",
        abort=abort,
    )
    assert outcome.aborted and time.monotonic() - started < 10
    assert "started" in text
    assert wait_until(lambda: not host_processes_with(marker))


def test_timeout_kills_the_whole_sandbox(session):
    marker = "79.9093"
    result = tool(session, "bash", {"command": f"sleep {marker} & echo go; wait", "timeout": 1})
    assert result.is_error and "Command timed out after 1 seconds" in result.text
    assert wait_until(lambda: not host_processes_with(marker))


# --- limits ------------------------------------------------------------------------------------


def test_fork_bomb_is_stopped_by_the_process_limit(session, settings):
    settings.PIWEB_SANDBOX_MAX_PROCESSES = 64
    before = len(psutil.pids())
    result = tool(
        session,
        "bash",
        {"command": "python3 -c 'import os\nwhile True: os.fork()'", "timeout": 30},
    )
    assert "Sandbox limit: at most 64 processes may run at once" in result.text
    assert "Resource temporarily unavailable" in result.text
    assert wait_until(lambda: len(psutil.pids()) < before + 20)


def test_shell_fork_bomb_is_stopped(session, settings):
    """What the process limit guarantees: never more than the limit at once, the bomb
    ends with the command, and nothing of it survives.

    It does not guarantee that a bomb reaches the limit. The classic `:(){ :|:& };: ;
    wait` (this test's first version) ends as soon as its first pipeline's two subshells
    have started theirs in the background; the sandbox's PID namespace dies with that
    top shell. On a busy machine the top shell often got there before the bomb had 64
    processes: nothing was refused, nothing printed, "(no output)". So this bomb keeps
    every process (each waits for its children), and the test stops it only once the
    output shows a refused fork and the host-side sampler has counted its processes a
    few times since (the 120 s timeout is a backstop).
    """
    settings.PIWEB_SANDBOX_MAX_PROCESSES = 64
    marker = "bomb-4711"
    abort = AbortSignal()
    refused = threading.Event()

    def on_snapshot(snap):
        if "Resource temporarily unavailable" in snap.content:
            refused.set()

    peak = 0
    done = threading.Event()

    def sample():
        nonlocal peak
        scans_since_refused = 0
        while not done.is_set():
            peak = max(peak, len(host_processes_with(marker)))
            if refused.is_set():
                scans_since_refused += 1
                if scans_since_refused >= 3:
                    abort.trigger()
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        context = sandboxing.tool_context(session, abort, on_snapshot)
        command = f"bomb() {{ bomb & bomb & wait; }}; bomb # {marker}"
        result = execute_tool("bash", json.dumps({"command": command, "timeout": 120}), context)
    finally:
        done.set()
        sampler.join(5)
    assert refused.is_set(), result.text  # it did reach the limit (then it was stopped)
    assert "Sandbox limit: at most 64 processes may run at once" in result.text
    assert result.is_error and "Command aborted" in result.text
    # The sandbox's processes are the bomb's bash processes and bwrap's two (the
    # outer one and the PID namespace's init), all counted against the limit.
    assert 10 < peak <= 64, peak
    assert wait_until(lambda: not host_processes_with(marker)), "a bomb process survived"


def test_four_gb_allocation_is_refused(session):
    result = tool(
        session, "bash", {"command": "python3 -c 'x = b\"x\" * (4 * 1024**3); print(len(x))'"}
    )
    assert result.is_error
    assert "MemoryError" in result.text
    assert "Sandbox limit: a process may use at most 3072 MB of address space" in result.text


def test_two_gb_file_is_stopped_at_the_file_size_limit(session, settings, ws):
    settings.PIWEB_SANDBOX_FILE_SIZE_MB = 64  # keeps the test cheap; the attempt is 2 GB
    result = tool(session, "bash", {"command": "head -c 2G /dev/zero > big.bin"})
    assert result.is_error
    assert "File size limit exceeded" in result.text
    assert "Sandbox limit: files written by commands may be at most 64 MB" in result.text
    assert (ws / "big.bin").stat().st_size <= 64 * 1024 * 1024


def test_cpu_time_limit(session, settings):
    settings.PIWEB_SANDBOX_CPU_SECONDS = 1
    result = tool(session, "bash", {"command": "python3 -c 'while True: pass'", "timeout": 60})
    assert result.is_error
    assert "Sandbox limit: a process used its 1 s of CPU time" in result.text


def test_limits_cannot_be_raised_inside(session):
    outcome, text = sh(session, "ulimit -v unlimited; ulimit -u unlimited; ulimit -H -t")
    assert text.count("cannot modify limit: Operation not permitted") == 2
    assert text.strip().splitlines()[-1] == "605"


# --- symlinks and the file tools ---------------------------------------------------------------


@pytest.fixture
def links(session, ws, outside):
    """Symlinks made by a command inside the sandbox, pointing outside (absolute and
    relative), to a file and to a directory."""
    rel = os.path.relpath(outside, ws)
    outcome, text = sh(
        session,
        f"ln -s {outside}/secret.txt abs-file; ln -s {outside} abs-dir; "
        f"ln -s {rel}/secret.txt rel-file; ln -s {rel} rel-dir; echo ok",
    )
    assert text.strip() == "ok"
    assert (ws / "abs-file").is_symlink()
    return ["abs-file", "abs-dir", "rel-file", "rel-dir"]


def assert_refused(result):
    assert result.is_error, result.text
    assert CANARY not in result.text


def test_read_through_symlinks_is_refused(session, links):
    for name in ("abs-file", "rel-file", "abs-dir/secret.txt", "rel-dir/nested/deep.txt"):
        assert_refused(tool(session, "read", {"path": name}))


def test_write_and_edit_through_symlinks_change_nothing_outside(session, links, outside):
    before = {p: p.read_bytes() for p in outside.rglob("*.txt")}
    for name in ("abs-file", "rel-file", "abs-dir/secret.txt", "rel-dir/new.txt", "abs-dir/n/x"):
        assert_refused(tool(session, "write", {"path": name, "content": "pwned"}))
    for name in ("abs-file", "rel-file", "abs-dir/secret.txt", "rel-dir/nested/deep.txt"):
        result = tool(session, "edit", {"path": name, "oldText": CANARY, "newText": "pwned"})
        assert_refused(result)
    after = {p: p.read_bytes() for p in outside.rglob("*.txt")}
    assert after == before and not (outside / "new.txt").exists()
    assert not (outside / "n").exists()


def test_grep_find_ls_never_show_what_is_outside(session, links, ws):
    (ws / "mine.txt").write_text(f"mine {CANARY[:6]}\n")
    walk = tool(session, "grep", {"pattern": "canary"})
    assert not walk.is_error and "mine.txt" in walk.text and CANARY not in walk.text
    assert "deep.txt" not in walk.text and "secret.txt" not in walk.text
    for name in links:
        assert_refused(tool(session, "grep", {"pattern": "canary", "path": name}))
    found = tool(session, "find", {"pattern": "**/*.txt"})
    assert "mine.txt" in found.text and "secret.txt" not in found.text
    assert "deep.txt" not in found.text
    for name in ("abs-dir", "rel-dir"):
        assert_refused(tool(session, "find", {"pattern": "*", "path": name}))
        assert_refused(tool(session, "ls", {"path": name}))
        assert_refused(tool(session, "ls", {"path": f"{name}/nested"}))
    listing = tool(session, "ls", {})
    assert not listing.is_error
    # Links to outside are listed as names, never as directories (that would leak).
    assert "abs-dir\n" in listing.text + "\n" and "abs-dir/" not in listing.text


def test_dotdot_and_absolute_escapes_in_the_middle_of_a_path(session, ws, outside):
    (ws / "sub").mkdir()
    rel = os.path.relpath(outside, ws / "sub")
    for path in (f"sub/{rel}/secret.txt", f"{ws}/sub/../../../{outside.name}/secret.txt"):
        assert_refused(tool(session, "read", {"path": path}))
        assert_refused(tool(session, "write", {"path": path, "content": "pwned"}))
    assert (outside / "secret.txt").read_text() == f"{CANARY}-file\n"


def test_symlinks_inside_the_workspace_still_work(session, ws):
    (ws / "real").mkdir()
    (ws / "real" / "a.txt").write_text("hello inside\n")
    sh(session, f"ln -s real alias; ln -s {ws}/real/a.txt abs-alias.txt")
    assert tool(session, "read", {"path": "alias/a.txt"}).text == "hello inside\n"
    assert tool(session, "read", {"path": "abs-alias.txt"}).text == "hello inside\n"
    assert not tool(session, "write", {"path": "alias/b.txt", "content": "b"}).is_error
    assert (ws / "real" / "b.txt").read_text() == "b"


def test_hard_links_to_outside_files_cannot_be_made(session, outside):
    outcome, text = sh(session, f"ln {outside}/secret.txt hard.txt")
    assert outcome.exit_code != 0 and "No such file or directory" in text


def test_symlink_swapped_in_during_tool_calls_never_escapes(session, ws, outside):
    """A race loop in the sandbox swaps `swap` (and `dir`) between a real file/directory
    and symlinks to outside while the file tools run against them."""
    (ws / "victim").mkdir()
    race = (
        f"end=$((SECONDS+8)); while [ $SECONDS -lt $end ]; do "
        f"rm -rf swap dir; echo inside > swap; mkdir dir; echo inside > dir/f.txt; "
        f"rm -rf swap dir; ln -s {outside}/secret.txt swap; ln -s {outside}/nested dir; "
        f"done"
    )
    abort = AbortSignal()
    runner = threading.Thread(target=lambda: sh(session, race, abort=abort, timeout=30))
    runner.start()
    try:
        assert wait_until(lambda: (ws / "swap").exists() or (ws / "swap").is_symlink(), 10)
        before = (outside / "secret.txt").read_bytes()
        seen_inside = 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            for name, args in (
                ("read", {"path": "swap"}),
                ("read", {"path": "dir/deep.txt"}),
                ("write", {"path": "swap", "content": "pwned"}),
                ("write", {"path": "dir/written.txt", "content": "pwned"}),
                ("edit", {"path": "swap", "oldText": CANARY, "newText": "pwned"}),
                ("grep", {"pattern": "canary|inside"}),
                ("find", {"pattern": "**/*"}),
                ("ls", {"path": "dir"}),
            ):
                result = tool(session, name, args)
                assert CANARY not in result.text, (name, args, result.text)
                assert "deep.txt" not in result.text or name == "read", (name, result.text)
                seen_inside += "inside" in result.text
        assert (outside / "secret.txt").read_bytes() == before
        assert (outside / "nested" / "deep.txt").read_text() == f"{CANARY}-deep\n"
        assert seen_inside  # the race really alternated under the tools
    finally:
        abort.trigger()
        runner.join(30)


# --- ordinary work -------------------------------------------------------------------------------


def test_ordinary_work_succeeds_and_files_belong_to_the_worker_user(session, ws):
    assert not tool(session, "write", {"path": "src/app.py", "content": "print(6 * 7)\n"}).is_error
    outcome, text = sh(
        session,
        "python3 src/app.py && mkdir -p out && echo made > out/file.txt && "
        "git init -q . && git add -A && git commit -qm first && git log --format=%s",
    )
    assert outcome.exit_code == 0, text
    assert text.splitlines()[:2] == ["42", "first"]
    assert (ws / "out" / "file.txt").read_text() == "made\n"
    commands_account = sandboxing.config().command_owner or (os.getuid(), os.getgid())
    for path in (ws / "out" / "file.txt", ws / ".git" / "HEAD", ws / "src" / "app.py", ws / "src"):
        info = path.stat()
        assert (info.st_uid, info.st_gid) == commands_account
    edit = tool(session, "edit", {"path": "src/app.py", "oldText": "6 * 7", "newText": "6 * 9"})
    assert not edit.is_error
    assert tool(session, "bash", {"command": "python3 src/app.py"}).text == "54\n"
    assert "app.py" in tool(session, "grep", {"pattern": "print"}).text
    assert "src/app.py" in tool(session, "find", {"pattern": "**/*.py"}).text


@pytest.mark.skipif(not shutil.which("node"), reason="node is not installed on this machine")
def test_node_and_npm_run(session, ws):
    outcome, text = sh(
        session,
        "node -e 'console.log(1 + 1)' && npm --version && npm init -y >/dev/null && "
        "node -p 'require(\"./package.json\").name'",
    )
    assert outcome.exit_code == 0, text
    lines = text.splitlines()
    assert lines[0] == "2" and lines[-1] == ws.name
    commands_account = sandboxing.config().command_owner or (os.getuid(), os.getgid())
    assert (ws / "package.json").stat().st_uid == commands_account[0]


# --- the management commands (refusing without bwrap: test_sandboxing.py) ----------------------


def run_management(*args):
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        call_command(*args)
    return exit_info.value.code, out.getvalue()


def test_run_in_workspace_is_the_agents_bash(session, settings):
    code, out = run_management("run_in_workspace", session.pi_id, "--", "id -u; pwd; exit 3")
    assert code == 3
    assert out.splitlines()[:2] == ["1000", session.cwd]
    assert "Command exited with code 3" in out
    code, out = run_management(
        "run_in_workspace", session.pi_id, "--", f"cat {settings.VAR_DIR}/secret_key"
    )
    assert code == 1 and "No such file or directory" in out
    code, out = run_management("run_in_workspace", session.pi_id, "--", "seq 1 5000")
    assert code == 0 and out.startswith("30")  # the tail, as the agent sees it
    assert "[Showing lines 30" in out and " of 500" in out and "Full output: " in out


def test_run_tool_is_the_agents_tool(session, ws, outside, links):
    code, out = run_management(
        "run_tool", session.pi_id, "write", '{"path": "a.txt", "content": "A\\n"}'
    )
    assert code == 0 and "Successfully wrote 2 bytes to a.txt" in out
    code, out = run_management("run_tool", session.pi_id, "read", '{"path": "a.txt"}')
    assert (code, out) == (0, "A\n")
    code, out = run_management("run_tool", session.pi_id, "read", '{"path": "abs-file"}')
    assert code == 1 and CANARY not in out and "outside the workspace" in out
    code, out = run_management("run_tool", session.pi_id, "bash", '{"command": "id -u"}')
    assert (code, out) == (0, "1000\n")
    code, out = run_management("run_tool", session.pi_id, "nope", "{}")
    assert code == 1 and "Tool nope not found" in out


def test_runpiweb_banner_prints_the_sandbox_status(child_env, tmp_path):
    import signal
    import subprocess
    import sys

    from tests.support.processes import REPO, free_port

    # Its own Celery queue: its worker must not take tasks meant for the test worker.
    queue = f"runpiweb-banner-{os.urandom(4).hex()}"
    env = dict(child_env, PIWEB_SANDBOX="off", PYTHONUNBUFFERED="1", PIWEB_CELERY_QUEUE=queue)
    argv = [sys.executable, "manage.py", "runpiweb", "--port", str(free_port())]
    argv += ["--concurrency", "1"]
    log = tmp_path / "runpiweb.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        assert wait_until(lambda: "Limits:" in log.read_text(), 60), log.read_text()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    banner = log.read_text()
    assert "Sandbox: OFF (PIWEB_SANDBOX=off)" in banner and "single-user machine" in banner
    assert "Limits: workspace quota 10240 MB per user" in banner
    assert "worker slots: 1 agent runs, 3 commands, 2 summaries, 1 imports." in banner


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root")
def test_unprivileged_worker_gets_its_own_files_and_the_process_limit():
    """The production layout of docs/security.md: bwrap started by an unprivileged worker user (here
    uid 65534). Files land owned by that user, and RLIMIT_NPROC (enforced for non-root)
    stops a fork bomb even without a pids cgroup."""
    import subprocess
    import tempfile

    from sessions_app.agent import sandbox as sandbox_module

    workspace = Path(tempfile.mkdtemp(prefix="piweb-unpriv-ws-", dir="/tmp"))
    stage = Path(tempfile.mkdtemp(prefix="piweb-unpriv-stage-", dir="/tmp"))
    try:
        os.chown(workspace, 65534, 65534)
        os.chmod(stage, 0o700)
        config = sandbox_module.SandboxConfig(stage_dir=str(stage), max_processes=32)
        cgroup_parent = sandbox_module.PidsCgroup._parent
        sandbox_module.PidsCgroup._parent = None  # only the kernel's RLIMIT_NPROC
        try:
            launch = sandbox_module.launch(
                config,
                "id -u; touch made.txt; python3 -c 'import os\nwhile True: os.fork()' 2>&1 | tail -1",
                str(workspace),
            )
        finally:
            sandbox_module.PidsCgroup._parent = cgroup_parent
        os.chmod(stage, 0o755)  # the worker user must be able to read its staged /etc
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *launch.argv]
        result = subprocess.run(
            argv, pass_fds=launch.pass_fds, env=launch.env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        launch.cleanup()
        lines = result.stdout.splitlines()
        assert lines[0] == "1000", result.stderr
        assert "Resource temporarily unavailable" in lines[-1]
        made = (workspace / "made.txt").stat()
        assert (made.st_uid, made.st_gid) == (65534, 65534)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
        shutil.rmtree(stage, ignore_errors=True)


# --- setuid: nothing a session leaves behind runs with anyone's privileges -----------------------

SETUID_ATTEMPTS = (
    "cp /usr/bin/python3 ./p && chmod 6755 ./p; echo chmod=$?; "
    "chmod u+s ./p; echo u+s=$?; chmod g+s ./p; echo g+s=$?; "
    "install -m 4755 /usr/bin/true ./t; echo install=$?; "
    'python3 -c "import os\n'
    "for label, make in (('open', lambda: os.close(os.open('q', os.O_CREAT | os.O_WRONLY, 0o4755))),\n"
    "                    ('tmpfile', lambda: os.close(os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o2755))),\n"
    "                    ('mknod', lambda: os.mknod('r', 0o104755)),\n"
    "                    ('fchmod', lambda: os.chmod(os.open('p', os.O_RDONLY), 0o4755))):\n"
    "    try:\n"
    "        make(); print(label + '=made')\n"
    "    except OSError as exc:\n"
    "        print(label + '=' + str(exc.errno))\n"
    '"; chmod 700 ./p; echo plain=$?'
)


def setuid_files(root: Path) -> list[str]:
    found = []
    for directory, _dirs, files in os.walk(root):
        for name in files:
            mode = os.lstat(os.path.join(directory, name)).st_mode
            if mode & 0o6000:
                found.append(os.path.join(directory, name))
    return found


def as_another_account(*argv: str):
    """Run ``argv`` as uid/gid 65534. The program is started by a shell that already runs
    as that account: setpriv's own exec still looks the path up with root's capabilities."""
    import subprocess

    return subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
         "/bin/sh", "-c", 'exec "$@"', "sh", *argv],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_no_setuid_or_setgid_file_can_be_made_inside(session, ws):
    """The attack as it was found: copy a shell-capable binary, chmod 6755. Every way to
    set the bits (chmod, fchmod, install, open/O_TMPFILE/mknod with such a mode) is refused,
    while an ordinary chmod still works."""
    _outcome, text = sh(session, SETUID_ATTEMPTS)
    results = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    assert results["chmod"] == results["u+s"] == results["g+s"] == "1", text
    assert results["install"] != "0", text
    for label in ("open", "tmpfile", "mknod", "fchmod"):
        assert results[label] == "1", text  # EPERM
    assert results["plain"] == "0", text
    assert (ws / "p").exists() and setuid_files(ws) == []


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root")
def test_planted_file_neither_runs_as_root_nor_reaches_the_service(session, ws, settings):
    """Another local account (uid 65534) tries to use what the session left: it cannot
    reach the workspace at all, nor the var folder with the database and the secret key."""
    sh(session, "cp /usr/bin/python3 ./p; chmod 6755 ./p; cp /usr/bin/id ./i")
    assert setuid_files(ws) == []
    planted = ws / "p"
    ran = as_another_account(str(planted), "-c", "import os; print(os.geteuid())")
    assert ran.returncode != 0 and "Permission denied" in ran.stderr
    for private in (settings.PIWEB_WORKSPACE_ROOTS[0], ws.parent, settings.VAR_DIR):
        info = os.stat(private)
        assert info.st_mode & 0o007 == 0, private  # nothing for other accounts
        assert info.st_mode & 0o070 in (0, 0o010), private  # at most passing through
        assert info.st_mode & 0o070 == 0 or info.st_gid == settings.PIWEB_SANDBOX_HOST_UID
    key_file = Path(settings.VAR_DIR, "secret_key")
    read = as_another_account("cat", str(key_file))
    assert read.returncode != 0 and "Permission denied" in read.stderr
    listed = as_another_account("ls", str(ws))
    assert listed.returncode != 0


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root")
def test_a_root_worker_runs_commands_as_an_unprivileged_host_account(session, ws, settings):
    """The third layer on its own: were a setuid bit to get through anyway (here set by
    the host itself) and the file reachable, it would make its runner the sandbox's host
    account, never root."""
    owner = sandboxing.config().command_owner
    assert owner == (settings.PIWEB_SANDBOX_HOST_UID,) * 2 and owner[0] != 0
    assert f"commands run as host uid {owner[0]} (the worker is root)" in sandboxing.status()
    assert not tool(session, "write", {"path": "made/by-tool.txt", "content": "x"}).is_error
    outcome, text = sh(session, "cp /usr/bin/python3 ./p && echo more >> made/by-tool.txt")
    assert outcome.exit_code == 0, text
    for path in (ws, ws / "p", ws / "made", ws / "made" / "by-tool.txt"):
        assert (path.stat().st_uid, path.stat().st_gid) == owner, path
    planted = ws / "p"
    os.chmod(planted, 0o6755)  # what the filter refuses inside, done from outside
    opened = [ws]
    while opened[-1] != Path("/"):
        opened.append(opened[-1].parent)
    modes = {path: path.stat().st_mode for path in opened}
    try:
        for path in opened:
            os.chmod(path, modes[path] | 0o055)
        ran = as_another_account(str(planted), "-c", "import os; print(os.geteuid(), os.getegid())")
    finally:
        for path in opened:
            os.chmod(path, modes[path] & 0o7777)
        os.chmod(planted, 0o755)
    assert ran.stdout.split() == [str(owner[0]), str(owner[1])], ran.stderr


def test_workspace_handed_over_without_following_links(session, ws, outside, settings):
    """A workspace the worker made is given to the commands' account on first use; a
    symlink in it to a file outside is handed over as the link, never its target."""
    if sandboxing.config().command_owner is None:
        pytest.skip("commands run as the worker's own account here: nothing is handed over")
    (ws / "link").symlink_to(outside / "secret.txt")
    (ws / "sub").mkdir()
    before = (outside / "secret.txt").stat()
    outcome, text = sh(session, "touch sub/new")
    assert outcome.exit_code == 0, text
    after = (outside / "secret.txt").stat()
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
    assert os.lstat(ws / "link").st_uid == settings.PIWEB_SANDBOX_HOST_UID
