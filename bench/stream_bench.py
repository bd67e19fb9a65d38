"""Bash output streaming: from the process, through the tail truncator, to a websocket.

Two measurements for `yes | head -c SIZE` (default 500 MB):

1. truncator: run_shell + StreamingTail in this process (pipe -> rolling buffer ->
   full-output file), snapshots taken every 100 ms but not sent anywhere: MB/s and the
   process's peak RSS growth.
2. end to end: a real Celery worker runs the command as a user `!cmd`, publishes the
   throttled snapshots on the channel layer, daphne forwards them to a websocket client
   (this script): MB/s from send to `run_end`, snapshots/s received, bytes received by
   the client, and the peak RSS of the worker and of daphne.

Runs on the embedded default (a temporary SQLite database and the embedded Redis in a
temporary directory) unless REDIS_URL / DATABASE_URL are set.

    .venv/bin/python bench/stream_bench.py [--size 500M] [--skip-e2e]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from support import free_port, wait_port

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def parse_size(text: str) -> int:
    units = {"K": 1024, "M": 1024**2, "G": 1024**3}
    text = text.strip().upper()
    if text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def rss(pid: int, children: bool = True) -> int:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)] if children else [proc]
        return sum(p.memory_info().rss for p in procs)
    except psutil.NoSuchProcess:
        return 0


class PeakSampler(threading.Thread):
    def __init__(self, pids: dict[str, int]):
        super().__init__(daemon=True)
        self.pids = pids
        self.peak = {name: rss(pid) for name, pid in pids.items()}
        self.base = dict(self.peak)
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for name, pid in self.pids.items():
                self.peak[name] = max(self.peak[name], rss(pid))
            time.sleep(0.02)


def pipe_ceiling(size: int) -> float:
    """MB/s of the same command read by dd (no truncator): what this machine allows."""
    started = time.monotonic()
    subprocess.run(
        f"yes | head -c {size} | dd of=/dev/null bs=1M status=none", shell=True, check=True
    )
    return size / 1e6 / (time.monotonic() - started)


def bench_truncator(size: int, workdir: Path) -> dict:
    import resource

    from sessions_app.agent.shell import run_shell

    snapshots = []
    sampler = PeakSampler({"bench": os.getpid()})
    sampler.start()
    before = resource.getrusage(resource.RUSAGE_SELF)
    outcome = run_shell(
        f"yes | head -c {size}",
        str(workdir),
        output_path=str(workdir / "truncator-full.log"),
        on_snapshot=lambda s: snapshots.append(s.total_bytes),
    )
    after = resource.getrusage(resource.RUSAGE_SELF)
    sampler.stop.set()
    sampler.join()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    full = os.path.getsize(workdir / "truncator-full.log")
    os.unlink(workdir / "truncator-full.log")
    return {
        "bytes": size,
        "seconds": outcome.duration,
        "mb_per_s": size / 1e6 / outcome.duration,
        "snapshots": len(snapshots),
        "snapshots_per_s": len(snapshots) / outcome.duration,
        "full_output_bytes": full,
        "peak_rss_growth_mb": (sampler.peak["bench"] - sampler.base["bench"]) / 1e6,
        "notice": outcome.result.notice,
        "cpu_seconds": cpu,
        "mb_per_cpu_s": size / 1e6 / cpu if cpu else float("inf"),
    }


def bench_end_to_end(size: int, tmp: Path) -> dict:
    import django
    import websockets

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    from piweb import embedded
    from sessions_app.models import Job
    from sessions_app.selectors import paths
    from sessions_app.services import chat, sessions, workspaces

    redis_proc = (
        embedded.start(settings.EMBEDDED_REDIS_SOCKET) if settings.USES_EMBEDDED_REDIS else None
    )
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(f"bench-{uuid.uuid4().hex[:6]}", password="x")
    workspace = workspaces.user_workspace(user) / "bench"
    workspace.mkdir(parents=True, exist_ok=True)
    session = sessions.create_session(owner=user, cwd=str(workspace))
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value

    env = dict(os.environ)
    queue = f"bench-{uuid.uuid4().hex[:6]}"
    env["PIWEB_CELERY_QUEUE"] = queue
    port = free_port()
    logs = tmp / "logs"
    logs.mkdir()
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "piweb", "worker", "-l", "warning", "-c", "1",
         "-Q", queue, "--without-gossip", "--without-mingle", "-n", f"{queue}@%h"],
        cwd=REPO, env=env, stdout=(logs / "worker.log").open("wb"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    daphne = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"],
        cwd=REPO, env=env, stdout=(logs / "daphne.log").open("wb"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_port(port, 30, "daphne")
        time.sleep(3)  # let the worker connect to the broker
        os.environ["PIWEB_CELERY_QUEUE"] = queue
        settings.CELERY_TASK_DEFAULT_QUEUE = queue
        from piweb.celery import app

        app.conf.task_default_queue = queue

        received = {"snapshots": 0, "bytes": 0, "last_total": 0, "end": None, "first": None}
        measured: dict = {}

        async def listen(ready: threading.Event, done: threading.Event):
            url = f"ws://127.0.0.1:{port}/ws/sessions/{session.pi_id}/"
            headers = {
                "Cookie": f"{settings.SESSION_COOKIE_NAME}={cookie}",
                "Origin": f"http://127.0.0.1:{port}",
            }
            async with websockets.connect(url, additional_headers=headers, max_size=None) as ws:
                ready.set()
                while True:
                    raw = await asyncio.wait_for(ws.recv(), 600)
                    received["bytes"] += len(raw)
                    msg = json.loads(raw)
                    if msg["event"] == "bash_snapshot":
                        received["snapshots"] += 1
                        received["last_total"] = msg["data"]["total_bytes"]
                        received["first"] = received["first"] or time.monotonic()
                    elif msg["event"] == "run_end" and msg["data"].get("run_id") == measured.get(
                        "run_id"
                    ):
                        received["end"] = time.monotonic()
                        done.set()
                        return

        ready, done = threading.Event(), threading.Event()
        listener = threading.Thread(target=lambda: asyncio.run(listen(ready, done)), daemon=True)
        listener.start()
        assert ready.wait(30), "websocket did not connect"
        # Warm the worker up (its first task imports the agent code) before measuring.
        chat.send_message(session, user, "!true")
        deadline = time.monotonic() + 60
        while Job.objects.filter(session=session, status__in=Job.ACTIVE).exists():
            assert time.monotonic() < deadline, "warm-up run did not finish"
            time.sleep(0.1)
        done.clear()
        received.update(snapshots=0, bytes=0, last_total=0, end=None, first=None)
        sampler = PeakSampler({"worker": worker.pid, "daphne": daphne.pid})
        sampler.start()
        started = time.monotonic()
        job = chat.send_message(session, user, f"!yes | head -c {size}")
        measured["run_id"] = str(job.pk)
        assert done.wait(900), "run did not finish"
        sampler.stop.set()
        sampler.join()
        elapsed = received["end"] - started
        job.refresh_from_db()
        session.refresh_from_db()
        entry = paths.load_path(session)[-1]["message"]
        full = entry.get("fullOutputPath")
        full_size = os.path.getsize(full) if full else 0
        if full:
            os.unlink(full)
        return {
            "bytes": size,
            "seconds": elapsed,
            "mb_per_s": size / 1e6 / elapsed,
            "snapshots_received": received["snapshots"],
            "snapshots_per_s": received["snapshots"] / elapsed,
            "ws_bytes_received_mb": received["bytes"] / 1e6,
            "last_snapshot_total_bytes": received["last_total"],
            "full_output_bytes": full_size,
            "job_status": job.status if isinstance(job, Job) else None,
            "worker_peak_rss_mb": sampler.peak["worker"] / 1e6,
            "worker_rss_growth_mb": (sampler.peak["worker"] - sampler.base["worker"]) / 1e6,
            "daphne_peak_rss_mb": sampler.peak["daphne"] / 1e6,
            "daphne_rss_growth_mb": (sampler.peak["daphne"] - sampler.base["daphne"]) / 1e6,
        }
    finally:
        for proc in (worker, daphne):
            try:
                os.killpg(proc.pid, 15)
                proc.wait(20)
            except Exception:
                os.killpg(proc.pid, 9)
        if redis_proc is not None:
            redis_proc.terminate()
            redis_proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", default="500M", help="bytes of output (e.g. 500M)")
    parser.add_argument("--skip-e2e", action="store_true", help="only the in-process truncator")
    args = parser.parse_args()
    size = parse_size(args.size)
    tmp = Path(tempfile.mkdtemp(prefix="piweb-stream-bench-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
    os.environ.setdefault("PIWEB_VAR_DIR", str(tmp / "var"))
    os.environ.setdefault("PIWEB_WORKSPACE_ROOTS", str(tmp / "var" / "workspaces"))
    os.environ.setdefault("PIWEB_ARTIFACT_DIR", str(tmp / "var" / "artifacts"))
    try:
        print(f"yes | head -c {size}  ({size / 1e6:.0f} MB)")
        print(f"pipe ceiling (yes | head | dd, no truncator): {pipe_ceiling(size):.0f} MB/s")
        t = bench_truncator(size, tmp)
        print(
            f"truncator (in process): {t['mb_per_s']:.0f} MB/s, {t['seconds']:.2f} s, "
            f"{t['snapshots']} snapshots ({t['snapshots_per_s']:.1f}/s), "
            f"peak RSS growth {t['peak_rss_growth_mb']:.1f} MB, full output file {t['full_output_bytes']} bytes"
        )
        print(
            f"  truncator CPU cost: {t['cpu_seconds']:.2f} CPU-s = {t['mb_per_cpu_s']:.0f} MB per CPU-second "
            "(read + count + full-output write + snapshots; the wall-clock rate above also "
            "depends on the producer and on other load)"
        )
        print(f"  final notice: {t['notice']}")
        if not args.skip_e2e:
            e = bench_end_to_end(size, tmp)
            print(
                f"process -> worker -> channel layer -> daphne -> websocket: {e['mb_per_s']:.0f} MB/s, "
                f"{e['seconds']:.2f} s, {e['snapshots_received']} snapshots received "
                f"({e['snapshots_per_s']:.1f}/s), {e['ws_bytes_received_mb']:.1f} MB over the websocket"
            )
            print(
                f"  worker peak RSS {e['worker_peak_rss_mb']:.0f} MB (growth {e['worker_rss_growth_mb']:.1f} MB), "
                f"daphne peak RSS {e['daphne_peak_rss_mb']:.0f} MB (growth {e['daphne_rss_growth_mb']:.1f} MB), "
                f"full output file {e['full_output_bytes']} bytes, job {e['job_status']}"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
