"""Sync benchmark: from a line written on the "laptop" to the line stored on the server,
and how fast a backlog goes up.

The real processes: `python -m piweb.server` (daphne as runpiweb starts it) on PostgreSQL
and Redis, and the sync client as a laptop runs it (downloaded from the server at
/sync/piweb_sync.py, run by a python3 with no packages, over loopback HTTP).

1. latency: the client follows a folder while a writer appends a line 10 times a second
   (as pi writes a busy session); this process watches the entries table and notes when
   each line's entry is stored. Prints p50 and p95 (targets: p50 < 300 ms, p95 < 1 s).
2. backlog: a session file of 100 MB (by default) sent with `push`; prints MB/s
   (target 20 MB/s).

Run: .venv/bin/python bench/sync_bench.py [--seconds 30] [--backlog-mb 100]
Uses its own PostgreSQL database (`piweb_sync_bench` on 127.0.0.1:5432, or
PIWEB_BENCH_PG_URL) and an embedded Redis on a socket under /tmp (or
PIWEB_BENCH_REDIS_URL); files and logs go under /tmp and are deleted at the end, as is
the database.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from support import free_port, pg_admin, pg_name, wait_port
from upload_bench import write_session

REPO = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("PIWEB_BENCH_PG_URL", "postgres://127.0.0.1:5432/piweb_sync_bench")
REDIS_URL = os.environ.get("PIWEB_BENCH_REDIS_URL", "")
PLAIN_PYTHON = ["/usr/bin/python3", "-I", "-S"]
MB = 1024 * 1024
SID = "0199bbbb-cccc-7ddd-8eee-000000000001"


def _env(var_dir: Path, redis_url: str) -> dict:
    return dict(
        os.environ,
        DATABASE_URL=PG_URL,
        REDIS_URL=redis_url,
        PIWEB_VAR_DIR=str(var_dir),
        PIWEB_CHANNEL_PREFIX="piweb-sync-bench",
        PIWEB_CELERY_PREFIX="piweb-sync-bench:",
        PIWEB_CELERY_QUEUE="piweb-sync-bench",
        PIWEB_MAX_UPLOAD_BYTES=str(1024 * MB),
        LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )


def _line(n: int) -> str:
    entry = {
        "type": "message",
        "id": f"{n:08x}",
        "parentId": f"{n - 1:08x}" if n else None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": f"line {n} " + "x" * 300, "timestamp": n},
    }
    return json.dumps(entry, separators=(",", ":")) + "\n"


def _header(sid: str) -> str:
    header = {
        "type": "session",
        "version": 3,
        "id": sid,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/work/bench",
    }
    return json.dumps(header, separators=(",", ":")) + "\n"


def latency(client: Path, base: str, token: str, work: Path, seconds: float) -> list[float]:
    from sessions_app.models import Entry

    folder = work / "sessions" / "--work-bench--"
    folder.mkdir(parents=True)
    path = folder / f"2026-01-01T00-00-00-000Z_{SID}.jsonl"
    path.write_text(_header(SID) + _line(0))
    argv = [*PLAIN_PYTHON, str(client), "--server", base, "--token", token]
    argv += ["--client", "bench", "--state", str(work / "state-latency.json")]
    argv += ["follow", str(work / "sessions")]
    follower = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not Entry.objects.filter(session__pi_id=SID).exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the first line never reached the server")
            time.sleep(0.05)
        written: dict[str, float] = {}
        seen: dict[str, float] = {}
        count = int(seconds * 10)
        start = time.monotonic()
        n = 1
        while n <= count or len(seen) < len(written):
            now = time.monotonic()
            if n <= count and now >= start + (n - 1) / 10:
                with path.open("a") as fh:
                    fh.write(_line(n))
                written[f"{n:08x}"] = time.monotonic()
                n += 1
            missing = [pi_id for pi_id in written if pi_id not in seen]
            if missing:
                stored = Entry.objects.filter(session__pi_id=SID, pi_id__in=missing).values_list(
                    "pi_id", flat=True
                )
                stamp = time.monotonic()
                for pi_id in stored:
                    seen[pi_id] = stamp
            if time.monotonic() > start + seconds + 60:
                raise RuntimeError(f"{len(written) - len(seen)} lines never reached the server")
            time.sleep(0.02)  # (a lighter watch leaves the two processes measured the CPU)
        return [seen[pi_id] - written[pi_id] for pi_id in written]
    finally:
        follower.terminate()
        follower.wait(10)


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process `pid` has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def backlog(
    client: Path, base: str, token: str, work: Path, megabytes: int, server_pid: int
) -> tuple[int, float, float, float]:
    """(bytes, seconds, the client's CPU seconds, the web process's CPU seconds): the CPU
    figures compare runs on a busy machine, where the wall time says little."""
    path = work / "backlog.jsonl"
    size = write_session(path, megabytes)
    argv = [*PLAIN_PYTHON, str(client), "--server", base, "--token", token]
    argv += ["--client", "bench", "--state", str(work / "state-backlog.json"), "push", str(path)]
    server_before = _cpu_seconds(server_pid)
    children_before = os.times()
    started = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    children = os.times()
    client_cpu = (children.children_user - children_before.children_user) + (
        children.children_system - children_before.children_system
    )
    return size, seconds, client_cpu, _cpu_seconds(server_pid) - server_before


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def _setup_django(env: dict):
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=REPO, env=env, check=True
    )
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
    import django

    django.setup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30, help="writing time, 10 lines/s")
    parser.add_argument("--backlog-mb", type=int, default=100)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    work = Path(tempfile.mkdtemp(prefix="piweb-sync-bench-"))
    var_dir = work / "var"
    var_dir.mkdir()
    children: list[subprocess.Popen] = []
    redis_url = REDIS_URL
    if not redis_url:
        sys.path.insert(0, str(REPO))
        from piweb import embedded

        socket_path = work / "redis.sock"
        children.append(embedded.start(socket_path))
        redis_url = f"unix://{socket_path}"
    env = _env(var_dir, redis_url)
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "REDIS_URL", "PIWEB_VAR_DIR")})
    pg_admin(PG_URL, f'DROP DATABASE IF EXISTS "{pg_name(PG_URL)}"')
    pg_admin(PG_URL, f'CREATE DATABASE "{pg_name(PG_URL)}"')
    try:
        _setup_django(env)
        from django.contrib.auth import get_user_model

        from sessions_app.services.sync_tokens import create_token

        user = get_user_model().objects.create_user("bench", password="bench-only-pw")
        token = create_token(user, "bench")[1]
        port = free_port()
        logs = work / "logs"
        logs.mkdir()
        server = subprocess.Popen(
            [sys.executable, "-m", "piweb.server", "-b", "127.0.0.1", "-p", str(port)]
            + ["piweb.asgi:application"],
            cwd=REPO,
            env=env,
            stdout=(logs / "server.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        children.append(server)
        wait_port(port, 60)
        base = f"http://127.0.0.1:{port}"
        client = work / "piweb_sync.py"
        with urllib.request.urlopen(f"{base}/sync/piweb_sync.py", timeout=30) as response:
            client.write_bytes(response.read())

        delays = latency(client, base, token, work, args.seconds)
        p50, p95 = _percentile(delays, 0.5) * 1000, _percentile(delays, 0.95) * 1000
        print(
            f"latency, {len(delays)} lines at 10/s: p50 {p50:.0f} ms, p95 {p95:.0f} ms, "
            f"max {max(delays) * 1000:.0f} ms (targets: p50 < 300 ms, p95 < 1000 ms: "
            f"{'MET' if p50 < 300 and p95 < 1000 else 'NOT MET'})",
            flush=True,
        )
        size, seconds, client_cpu, server_cpu = backlog(
            client, base, token, work, args.backlog_mb, server.pid
        )
        rate = size / MB / seconds
        print(
            f"backlog: {size / MB:.0f} MB pushed in {seconds:.1f} s: {rate:.1f} MB/s "
            f"(target 20 MB/s: {'MET' if rate >= 20 else 'NOT MET'}); CPU: client "
            f"{client_cpu:.1f} s, web process {server_cpu:.1f} s; load average "
            f"{os.getloadavg()[0]:.1f}",
            flush=True,
        )
    finally:
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                child.kill()
        from django.db import connections

        connections.close_all()
        pg_admin(PG_URL, f'DROP DATABASE IF EXISTS "{pg_name(PG_URL)}" WITH (FORCE)')
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
