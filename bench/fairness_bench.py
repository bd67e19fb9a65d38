"""Fairness benchmark: another user's `!echo` latency while one user holds every run slot
they may.

Self-contained: a fresh SQLite database and embedded Redis in a temp dir, and a real
``manage.py runpiweb`` (so the workers are exactly the ones `make run` starts: one per
queue group, each with its own slots; see piweb/queues.py). Run from the repository root::

    .venv/bin/python bench/fairness_bench.py [--echoes 20] [--limit 2] [--hog-sessions 6]

1. user "hog" opens ``--hog-sessions`` sessions and sends `!sleep 600` in each: ``--limit``
   of them run (PIWEB_USER_MAX_RUNS), the rest wait "queued behind your other runs";
2. user "other" sends ``--echoes`` `!echo` commands one after the other; each latency is
   send -> job done (the output stored in the session), as the page sees it;
3. prints p50 / p95 / max (target: p95 under 2 s), then stops everything.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from support import free_port, use_environment  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--echoes", type=int, default=20)
    p.add_argument("--limit", type=int, default=2, help="PIWEB_USER_MAX_RUNS")
    p.add_argument("--command-slots", type=int, default=3, help="PIWEB_COMMAND_CONCURRENCY")
    p.add_argument("--hog-sessions", type=int, default=6)
    return p.parse_args()


def percentile(values, p):
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[index]


def wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)


def main():
    args = parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="piweb-fairness-"))
    env = {
        "PIWEB_VAR_DIR": str(tmp),
        "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
        "PIWEB_CELERY_QUEUE": f"fair-{uuid.uuid4().hex[:6]}",
        "PIWEB_CHANNEL_PREFIX": f"fair{uuid.uuid4().hex[:6]}",
        "PIWEB_WORKSPACE_ROOTS": str(tmp / "workspaces"),
        "PIWEB_USER_MAX_RUNS": str(args.limit),
        "PIWEB_COMMAND_CONCURRENCY": str(args.command_slots),
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    use_environment(env)
    port = free_port()
    log_path = tmp / "runpiweb.log"
    with log_path.open("wb") as log:
        runpiweb = subprocess.Popen(
            [sys.executable, "manage.py", "runpiweb", "--port", str(port), "--concurrency", "2"],
            cwd=REPO,
            env=dict(os.environ),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait(lambda: "piweb is running" in log_path.read_text(errors="replace"), 120, "runpiweb")
        run(args, tmp)
    finally:
        os.killpg(runpiweb.pid, signal.SIGTERM)
        try:
            runpiweb.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(runpiweb.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


def run(args, tmp: Path):
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from sessions_app.models import Job
    from sessions_app.services import chat, sessions

    users = get_user_model().objects
    hog = users.create_user(f"hog-{uuid.uuid4().hex[:4]}", password="x")
    other = users.create_user(f"other-{uuid.uuid4().hex[:4]}", password="x")

    def session_for(user, name):
        cwd = tmp / "workspaces" / str(user.pk) / name
        cwd.mkdir(parents=True)
        return sessions.create_session(owner=user, cwd=str(cwd))

    hog_sessions = [session_for(hog, f"s{i}") for i in range(args.hog_sessions)]
    hog_jobs = [chat.send_message(s, hog, "!sleep 600") for s in hog_sessions]
    held = sum(chat.is_held(job) for job in hog_jobs)

    def running():
        return Job.objects.filter(pk__in=[j.pk for j in hog_jobs], status="running").count()

    wait(lambda: running() == min(args.limit, len(hog_jobs)), 120, "the hog's runs to start")
    print(
        f"hog: {len(hog_jobs)} `!sleep 600` sent, {running()} running (PIWEB_USER_MAX_RUNS="
        f"{args.limit}), {held} queued behind their other runs; "
        f"command slots: {args.command_slots}"
    )
    mine = session_for(other, "echo")
    latencies = []
    for i in range(args.echoes):
        started = time.monotonic()
        job = chat.send_message(mine, other, f"!echo hello-{i}")
        wait(
            lambda job=job: Job.objects.filter(pk=job.pk, status="done").exists(),
            120,
            "the echo",
        )
        latencies.append(time.monotonic() - started)
    p50, p95 = statistics.median(latencies), percentile(latencies, 95)
    verdict = "met" if p95 < 2.0 else "MISSED"
    print(
        f"other user's !echo latency over {len(latencies)}: p50 {p50 * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms "
        f"(target p95 < 2000 ms: {verdict})"
    )
    print(f"hog's runs still running meanwhile: {running()}")
    for session in hog_sessions:
        chat.stop_run(session, hog)
    wait(
        lambda: not Job.objects.filter(pk__in=[j.pk for j in hog_jobs], status__in=Job.ACTIVE),
        120,
        "the hog's runs to stop",
    )


if __name__ == "__main__":
    main()
