"""The sync client as a laptop runs it: a piweb server process of the test's own (so a
test can restart it), the client downloaded from it and run by a python3 with no
packages, a pi-like writer, and a loopback proxy whose connections a test can drop."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

from tests.support.processes import REPO, ManagedProcess, free_port

PLAIN_PYTHON = ["/usr/bin/python3", "-I", "-S"]  # no site-packages at all


def server_process(env: dict, log_dir: Path) -> ManagedProcess:
    """daphne (as `python -m piweb.server`) on a free port; `.url` is its base URL."""
    port = free_port()

    def ready(_):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    proc = ManagedProcess(
        f"daphne-sync-{port}",
        [sys.executable, "-m", "piweb.server", "-b", "127.0.0.1", "-p", str(port)]
        + ["piweb.asgi:application"],
        env,
        ready,
        log_dir,
    )
    proc.url = f"http://127.0.0.1:{port}"
    proc.port = port
    return proc


def download_client(url: str, folder: Path) -> Path:
    """GET /sync/piweb_sync.py from the running server, as a laptop would."""
    path = folder / "piweb_sync.py"
    with urllib.request.urlopen(f"{url}/sync/piweb_sync.py", timeout=30) as response:
        path.write_bytes(response.read())
    return path


def run_client(
    client: Path, url: str, token: str, state: Path, *args, log: Path | None = None, python=None
):
    """Start the client (`follow …`) in the background, by a python3 with no packages
    (or `python`); a Popen."""
    argv = [*(python or PLAIN_PYTHON), str(client), "--server", url, "--token", token]
    argv += ["--client", "test laptop", "--state", str(state), *args]
    out = open(log or os.devnull, "ab")  # noqa: SIM115 (the child keeps it)
    return subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)


def push_files(client: Path, url: str, token: str, state: Path, *files) -> str:
    argv = [*PLAIN_PYTHON, str(client), "--server", url, "--token", token]
    argv += ["--client", "test laptop", "--state", str(state), "push", *map(str, files)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def server_export(url: str, token: str, session_id: str) -> bytes | None:
    """The session's pi JSONL export through the token API (None before it exists)."""
    request = urllib.request.Request(f"{url}/api/v1/sessions/{session_id}/export.jsonl")
    request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read()
    except (OSError, json.JSONDecodeError):
        return None


class DroppingProxy:
    """A TCP proxy on loopback to `port`; `drop()` cuts every open connection at once
    (mid-request or mid-answer), as a network that goes away does."""

    def __init__(self, port: int):
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                conn.close()
                continue
            with self.lock:
                self.open += [conn, upstream]
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def drop(self) -> int:
        with self.lock:
            dropped, self.open = self.open, []
        for s in dropped:
            try:  # a reset, and the proxy's reads woken (a close alone leaves them waiting)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        return len(dropped)

    def close(self):
        self.listener.close()
        self.drop()
