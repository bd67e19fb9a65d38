"""What the benches that start real servers share: a scratch PostgreSQL database by
URL, a free loopback port and waiting for a server to listen on it, the filler text of
generated sessions, and the report a bench's child process prints on its last line.

Imported as ``support`` by the benches run as scripts (``bench/`` is their path).
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

WORDS = (
    "the session tree append leaf branch context compaction summary model token file "
    "path entry import export fork label bash output read write edit test build run"
).split()


def words_text(rng: random.Random, size: int) -> str:
    """About ``size`` characters of session-like words (what pi-like lines carry)."""
    out, length = [], 0
    while length < size:
        word = rng.choice(WORDS)
        out.append(word)
        length += len(word) + 1
    return " ".join(out)


def pg_admin(pg_url: str, sql: str) -> None:
    """Run ``sql`` (CREATE/DROP DATABASE) on the server of ``pg_url``, outside any
    transaction."""
    import dj_database_url
    import psycopg

    db = dj_database_url.parse(pg_url)
    with psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        dbname="postgres",
        user=db["USER"] or None,
        password=db["PASSWORD"] or None,
        autocommit=True,
    ) as conn:
        conn.execute(sql)


def pg_name(pg_url: str) -> str:
    import dj_database_url

    return dj_database_url.parse(pg_url)["NAME"]


def use_environment(env: dict[str, str]) -> None:
    """Make ``env`` this process's environment (without REDIS_URL, so piweb starts its
    embedded Redis), for the servers a bench starts too, and migrate its database."""
    os.environ.pop("REDIS_URL", None)
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "piweb.settings"
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=Path(__file__).resolve().parents[1],
        check=True,
        env=dict(os.environ),
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float, what: str = "the server") -> None:
    """Return once something listens on ``port``; RuntimeError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not start")


def print_report(report: dict) -> None:
    """What a bench's child process prints for its parent to read (`child_report`)."""
    print("RESULT " + json.dumps(report))


def child_report(proc: subprocess.CompletedProcess[str]) -> dict | None:
    """The report of a finished child process (its last ``RESULT`` line); None, with the
    tails of its output printed, when it failed or printed none."""
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        return None
    return json.loads(lines[-1][len("RESULT ") :])
