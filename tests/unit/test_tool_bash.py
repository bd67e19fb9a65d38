"""agent/tools/bash.py: one command in the sandbox: exit code, timeout, abort, spill file."""

import hashlib
import threading
import time

import psutil
import pytest

from tests.support.tool_runs import run, tool_context, tool_workspace


@pytest.fixture
def ws(tmp_path):
    return tool_workspace(tmp_path)


@pytest.fixture
def ctx(ws, tmp_path):
    return tool_context(ws, tmp_path)


def test_bash_exit_code_stderr_and_empty_output(ctx):
    assert run(ctx, "bash", {"command": "true"}).text == "(no output)"
    result = run(ctx, "bash", {"command": "echo out; echo err >&2; exit 4"})
    assert result.is_error and result.text == "out\nerr\n\n\nCommand exited with code 4"


def test_bash_timeout_kills_the_group(ctx, ws):
    started = time.monotonic()
    result = run(
        ctx, "bash", {"command": "echo before; sleep 30.101 & echo $! > kid; wait", "timeout": 1}
    )
    assert time.monotonic() - started < 10
    assert result.is_error and result.text == "before\n\n\nCommand timed out after 1 seconds"
    assert (ws / "kid").read_text().strip().isdigit()  # the background process had started
    assert wait_gone("30.101")


def wait_gone(marker, timeout=5.0):
    """No process on the host has ``marker`` in its command line (pids inside the
    sandbox are those of its own PID namespace, so they cannot be looked up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [
            p
            for p in psutil.process_iter(["cmdline", "status"])
            if marker in " ".join(p.info["cmdline"] or [])
            and p.info["status"] != psutil.STATUS_ZOMBIE
        ]
        if not alive:
            return True
        time.sleep(0.05)
    return False


def test_bash_abort_kills_the_whole_process_group(ctx, ws):
    snapshots = []
    ctx.on_bash_snapshot = snapshots.append
    timer = threading.Timer(1.0, ctx.abort.trigger)
    timer.start()
    result = run(
        ctx, "bash", {"command": "echo go; (sleep 40.202; echo late) & echo $! > kid; sleep 40"}
    )
    assert result.is_error and result.text == "go\n\n\nCommand aborted"
    assert (ws / "kid").read_text().strip().isdigit()
    assert wait_gone("40.202")
    assert snapshots and snapshots[-1].content == "go\n"


def test_bash_truncation_spill_file_is_byte_identical(ctx, tmp_path):
    command = "for i in $(seq 1 30000); do printf 'line %05d \\xff\\n' $i; done"
    result = run(ctx, "bash", {"command": command})
    path = result.details["fullOutputPath"]
    assert path.startswith(str(tmp_path / "artifacts"))
    expected = b"".join(b"line %05d \xff\n" % i for i in range(1, 30001))
    with open(path, "rb") as fh:
        assert hashlib.sha256(fh.read()).hexdigest() == hashlib.sha256(expected).hexdigest()
    # pi 0.80.2: the final newline starts no extra line (30000 lines).
    assert result.text.endswith(f"\n\n[Showing lines 28001-30000 of 30000. Full output: {path}]")
    assert "line 30000 \ufffd" in result.text
