"""Child processes of the test run (the worker, daphne, runpiweb, the follower): a free
port, waiting for one to come up (with its log's tail when it does not), and a process
with its log that a test can kill and start again."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from tests.support.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]

# PIWEB_MAX_UPLOAD_BYTES of the server and worker processes the tests start (child_env):
# small, so that a test can pass it cheaply.
SERVER_UPLOAD_LIMIT = 32 * 1024 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float, what: str, log: Path | None = None):
    """``wait_until``, failing with the tail of ``log`` (a child's output) on a timeout."""
    if wait_until(predicate, timeout):
        return
    tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    raise RuntimeError(f"timed out waiting for {what}\n{tail}")


class ManagedProcess:
    """A child process with its log file, restartable (for kill -9 tests)."""

    def __init__(self, name: str, argv: list[str], env: dict, ready, log_dir: Path):
        self.name, self.argv, self.env, self.ready = name, argv, env, ready
        self.log = log_dir / f"{name}.log"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60):
        log = self.log.open("ab")
        self.process = subprocess.Popen(
            self.argv,
            env=self.env,
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(
            lambda: self.process.poll() is None and self.ready(self),
            timeout,
            f"{self.name} to start",
            self.log,
        )
        return self

    def kill(self, sig: int = 9):
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            self.process.wait(30)

    def stop(self):
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
