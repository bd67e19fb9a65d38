"""Upload benchmark: what taking a big session file costs the web process, and how fast
the worker imports it.

The real processes: `python -m piweb.server` (daphne as runpiweb starts it) and a Celery
worker, on PostgreSQL and Redis. For each size (100 MB and 500 MB by default) a pi
session file is generated on disk, uploaded to /import/ as the page's form does (multipart,
streamed from the file), and the import job is followed until it is done. A sampler
reads the web process's RSS every 10 ms from before the upload to the end of the job.

Prints, per size: the web process's peak RSS growth over its RSS before the upload
(target under 100 MB), the upload's wall time, and the import job's time and throughput
(MB/s of file, from the job's start to its end in the worker).

Run: .venv/bin/python bench/upload_bench.py [--sizes 100,500] [--import-sizes 100]
(`--import-sizes`: the sizes whose import job is followed to the end and timed; the
others' jobs are left to the worker, which is stopped at the end.)
Uses its own PostgreSQL database (`piweb_upload_bench` on 127.0.0.1:5432, or
PIWEB_BENCH_PG_URL) and its own Redis (an embedded one on a socket under /tmp, or
PIWEB_BENCH_REDIS_URL); files and logs go under /tmp and are deleted at the end, as is
the database.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from support import free_port, pg_admin, pg_name, wait_port

REPO = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("PIWEB_BENCH_PG_URL", "postgres://127.0.0.1:5432/piweb_upload_bench")
REDIS_URL = os.environ.get("PIWEB_BENCH_REDIS_URL", "")
QUEUE = "piweb-upload-bench"
MB = 1024 * 1024


def _env(var_dir: Path, redis_url: str) -> dict:
    return dict(
        os.environ,
        DATABASE_URL=PG_URL,
        REDIS_URL=redis_url,
        PIWEB_VAR_DIR=str(var_dir),
        PIWEB_CELERY_QUEUE=QUEUE,
        PIWEB_CHANNEL_PREFIX="piweb-upload-bench",
        PIWEB_CELERY_PREFIX="piweb-upload-bench:",
        PIWEB_MAX_UPLOAD_BYTES=str(1024 * MB),
        PYTHONUNBUFFERED="1",
    )


def write_session(path: Path, megabytes: int) -> int:
    """A v3 pi session of about `megabytes` MB: a chain of user/assistant messages."""
    sid = str(uuid.uuid4())
    text = ("lorem ipsum dolor sit amet, consectetur adipiscing elit " * 150)[:8000]
    target = megabytes * MB
    with path.open("w") as fh:
        fh.write(
            json.dumps(
                {
                    "type": "session",
                    "version": 3,
                    "id": sid,
                    "timestamp": "2026-01-01T00:00:00.000Z",
                    "cwd": "/work/bench",
                }
            )
            + "\n"
        )
        parent, n = None, 0
        while fh.tell() < target:
            eid = f"{n:08x}"
            role = "user" if n % 2 == 0 else "assistant"
            message = {"role": role, "content": [{"type": "text", "text": f"{n} {text}"}]}
            if role == "assistant":
                message.update(
                    api="openai-completions",
                    provider="bench",
                    model="bench-model",
                    usage={"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0},
                    stopReason="stop",
                    timestamp=1767225600000 + n,
                )
            else:
                message["timestamp"] = 1767225600000 + n
            entry = {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": message,
            }
            fh.write(json.dumps(entry) + "\n")
            parent, n = eid, n + 1
    return path.stat().st_size


class RssSampler:
    def __init__(self, pid: int, interval: float = 0.01):
        import psutil

        self.process = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        return self.process.memory_info().rss

    def _run(self):
        while not self.stop_event.is_set():
            try:
                self.peak = max(self.peak, self.rss())
            except Exception:
                return
            time.sleep(self.interval)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        self.thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,500", help="file sizes in MB (comma list)")
    parser.add_argument("--import-sizes", default="100", help="sizes whose import is timed")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    timed = {int(s) for s in args.import_sizes.split(",") if s.strip()}

    # Stopped with SIGTERM, it still stops its processes and drops its database.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    work = Path(tempfile.mkdtemp(prefix="piweb-upload-bench-"))
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
    os.environ.update(PIWEB_CELERY_QUEUE=QUEUE, PIWEB_CELERY_PREFIX=env["PIWEB_CELERY_PREFIX"])
    pg_admin(PG_URL, f'DROP DATABASE IF EXISTS "{pg_name(PG_URL)}"')
    pg_admin(PG_URL, f'CREATE DATABASE "{pg_name(PG_URL)}"')
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=REPO, env=env, check=True
        )
        sys.path.insert(0, str(REPO))
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
        import django

        django.setup()
        from django.conf import settings as dj_settings
        from django.contrib.auth import get_user_model
        from django.contrib.sessions.backends.db import SessionStore

        from sessions_app.models import Job

        user = get_user_model().objects.create_user("bench", password="bench-only-pw")
        store = SessionStore()
        store["_auth_user_id"] = str(user.pk)
        store["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
        store["_auth_user_hash"] = user.get_session_auth_hash()
        store.create()

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
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "piweb", "worker", "-l", "warning"]
            + ["-c", "1", "-Q", QUEUE, "--without-gossip", "--without-mingle"],
            cwd=REPO,
            env=env,
            stdout=(logs / "worker.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        children.append(worker)
        wait_port(port, 60)

        import httpx

        base = f"http://127.0.0.1:{port}"
        print(f"upload bench: piweb.server pid {server.pid}, one worker; RSS sampled every 10 ms")
        print(
            f"{'size':>7} {'RSS before':>11} {'peak growth':>12} {'upload':>8} "
            f"{'import job':>11} {'throughput':>11}"
        )
        failures = []
        for megabytes in sizes:
            path = work / f"session-{megabytes}.jsonl"
            size = write_session(path, megabytes)
            with httpx.Client(base_url=base, timeout=3600) as client:
                client.cookies.set(dj_settings.SESSION_COOKIE_NAME, store.session_key)
                page = client.get("/")
                token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
                sampler = RssSampler(server.pid)
                before = sampler.rss()
                with sampler, path.open("rb") as fh:
                    started = time.monotonic()
                    response = client.post(
                        "/import/",
                        files={"file": (path.name, fh, "application/jsonl")},
                        headers={"X-CSRFToken": token, "HX-Request": "true"},
                    )
                    upload_seconds = time.monotonic() - started
                    if response.status_code != 202:
                        raise RuntimeError(f"upload answered {response.status_code}")
                    job_id = response.headers["Location"].rstrip("/").rsplit("/", 1)[-1]
                    while megabytes in timed:
                        job = Job.objects.get(pk=job_id)
                        if job.status not in Job.ACTIVE:
                            break
                        client.get(response.headers["Location"], headers={"HX-Request": "1"})
                        time.sleep(1)
            growth = (sampler.peak - before) / MB
            line = f"{size / MB:>5.0f}MB {before / MB:>9.0f}MB {growth:>10.1f}MB {upload_seconds:>7.1f}s"
            if megabytes in timed:
                job = Job.objects.get(pk=job_id)
                if job.status != "done":
                    raise RuntimeError(f"import job {job.status}: {job.error}")
                job_seconds = (job.finished_at - job.started_at).total_seconds()
                line += f" {job_seconds:>10.1f}s {size / MB / job_seconds:>7.1f}MB/s"
            else:
                line += f" {'(not timed)':>11}"
            print(line, flush=True)
            if growth >= 100:
                failures.append(f"{megabytes} MB: peak growth {growth:.0f} MB")
            path.unlink()
        print("target: web process peak RSS growth < 100 MB:", "MET" if not failures else failures)
    finally:
        children = [child for child in children if child is not None]
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
