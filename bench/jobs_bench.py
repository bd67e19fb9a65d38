"""Compaction jobs benchmark: per-job overhead and throughput with real workers.

Self-contained: starts its own scripted OpenAI-compatible server (instant replies), its own
database (a fresh SQLite file in a temp dir, or a fresh PostgreSQL database with
``--postgres URL``, created and dropped), its own embedded Redis on a unix socket, and
its own Celery worker processes. Run from the repository root::

    .venv/bin/python bench/jobs_bench.py [--jobs 50] [--sessions 100] [--rounds 10]
                                         [--workers 2] [--postgres postgres://127.0.0.1:5432/postgres]

1. overhead: one job at a time, enqueue -> compaction entry visible in the database,
   minus the time the job spent in the model call (measured inside the job). Target
   < 200 ms per job.
2. throughput: sessions x rounds compactions (default 1,000 over 100 sessions) on N
   worker processes (concurrency 1 each); every round appends a fresh turn to every
   session, then requests all compactions at once and waits for all to finish.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jobs", type=int, default=50, help="sequential jobs for the overhead phase")
    p.add_argument("--sessions", type=int, default=100)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--workers", type=int, default=2, help="worker processes (concurrency 1)")
    p.add_argument("--postgres", default="", help="admin URL of a PostgreSQL server to use")
    return p.parse_args()


def setup_environment(args, tmp: Path):
    from tests.support.scripted_llm import ScriptedLLM

    llm = ScriptedLLM()
    queue = f"bench-{uuid.uuid4().hex[:6]}"
    env = {
        "PIWEB_VAR_DIR": str(tmp),
        "PIWEB_CELERY_QUEUE": queue,
        "PIWEB_CHANNEL_PREFIX": f"bench{queue}",
        "PIWEB_WORKSPACE_ROOTS": str(tmp / "workspaces"),
        "PIWEB_MODEL_PROFILES": (
            '{"scripted": {"base_url": "'
            + llm.base_url
            + '", "api_key": "bench", "model": "scripted-model",'
            ' "context_window": 128000, "max_output": 4096}}'
        ),
        "PIWEB_LLM_BASE_URL": "",
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    pg_db = None
    if args.postgres:
        import dj_database_url
        import psycopg

        admin = dj_database_url.parse(args.postgres)
        pg_db = f"jobs_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(
            host=admin["HOST"] or "127.0.0.1",
            port=admin["PORT"] or 5432,
            dbname=admin["NAME"],
            user=admin["USER"] or None,
            password=admin["PASSWORD"] or None,
            autocommit=True,
        ) as conn:
            conn.execute(f'CREATE DATABASE "{pg_db}"')
        base = args.postgres.rsplit("/", 1)[0]
        env["DATABASE_URL"] = f"{base}/{pg_db}"
    else:
        env["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ.pop("REDIS_URL", None)  # always our own embedded Redis
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "piweb.settings"
    return llm, queue, pg_db


def drop_postgres(args, name):
    import dj_database_url
    import psycopg

    admin = dj_database_url.parse(args.postgres)
    with psycopg.connect(
        host=admin["HOST"] or "127.0.0.1",
        port=admin["PORT"] or 5432,
        dbname=admin["NAME"],
        user=admin["USER"] or None,
        password=admin["PASSWORD"] or None,
        autocommit=True,
    ) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def start_workers(n: int, queue: str, tmp: Path) -> list[subprocess.Popen]:
    procs = []
    for i in range(n):
        log = (tmp / f"worker{i}.log").open("wb")
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "piweb",
                    "worker",
                    "-l",
                    "info",
                    "-c",
                    "1",
                    "-Q",
                    queue,
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                    "-n",
                    f"bench{i}-{uuid.uuid4().hex[:4]}@%h",
                ],
                cwd=REPO,
                env=dict(os.environ),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    deadline = time.monotonic() + 60
    for i, proc in enumerate(procs):
        path = tmp / f"worker{i}.log"
        while "ready." not in path.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {i} did not start:\n{path.read_text()[-2000:]}")
            time.sleep(0.1)
    return procs


def stop_workers(procs):
    import signal

    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def wait_done(job_ids, timeout=600):
    from sessions_app.models import Job

    pending = set(job_ids)
    deadline = time.monotonic() + timeout
    while pending:
        finished = set(
            Job.objects.filter(pk__in=pending)
            .exclude(status__in=Job.ACTIVE)
            .values_list("pk", flat=True)
        )
        pending -= finished
        if not pending:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(pending)} jobs still active after {timeout}s")
        time.sleep(0.005 if len(pending) == 1 else 0.02)


def worker_cpu_seconds(procs) -> float:
    """CPU time (user + system) of the worker processes and their pool children."""
    try:
        import psutil
    except ImportError:
        return float("nan")
    total = 0.0
    for proc in procs:
        try:
            parent = psutil.Process(proc.pid)
            for p in [parent, *parent.children(recursive=True)]:
                t = p.cpu_times()
                total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def percentile(values, p):
    values = sorted(values)
    k = max(0, min(len(values) - 1, round(p / 100 * (len(values) - 1))))
    return values[k]


def main():
    args = parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="piweb-jobs-bench-"))
    llm, queue, pg_db = setup_environment(args, tmp)
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from piweb import embedded
    from sessions_app.models import Entry, Job
    from sessions_app.services import jobs
    from sessions_app.services import sessions as sessions_service
    from tests.support.job_sessions import add_turn
    from tests.support.scripted_llm import text

    redis_proc = embedded.start(settings.EMBEDDED_REDIS_SOCKET)
    workers = []
    try:
        call_command("migrate", verbosity=0)
        workers = start_workers(args.workers, queue, tmp)
        backend = "PostgreSQL" if args.postgres else "SQLite"
        print(f"jobs bench: {backend} + embedded Redis, {args.workers} worker(s) x concurrency 1")
        owner = get_user_model().objects.create_user(f"bench-{uuid.uuid4().hex[:6]}")
        small = {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 150}

        def new_session():
            session = sessions_service.create_session(
                owner=owner, cwd="/tmp", model_profile="scripted"
            )
            session.settings = {"compaction": small}
            session.save(update_fields=["settings"])
            for n in range(1, 4):
                add_turn(session, n, filler=300)
            session.refresh_from_db()
            return session

        # Warm-up (imports, connections) on both sides.
        warm = new_session()
        llm.push(*[text("warm-up summary")] * (args.workers * 2))
        wait_done([jobs.request_compaction(warm, actor=owner).pk])

        # 1. Overhead, one job at a time.
        session = new_session()
        overheads, totals, model_ms = [], [], []
        pickup, work, request_ms = [], [], []
        llm.push(*[text("## Goal\nbench summary")] * args.jobs)
        cpu_workers = 0.0
        cpu_request = 0.0
        for i in range(args.jobs):
            add_turn(session, 10 + i, filler=300)
            session.refresh_from_db()
            cpu_before = worker_cpu_seconds(workers)
            started = time.perf_counter()
            own_before = time.process_time()
            job = jobs.request_compaction(session, actor=owner)
            cpu_request += time.process_time() - own_before
            request_ms.append((time.perf_counter() - started) * 1000)
            wait_done([job.pk], timeout=60)
            elapsed = (time.perf_counter() - started) * 1000
            cpu_workers += worker_cpu_seconds(workers) - cpu_before
            job.refresh_from_db()
            assert job.status == "done", (job.status, job.error)
            model = float(job.progress.get("model_ms", 0.0))
            totals.append(elapsed)
            pickup.append((job.started_at - job.created_at).total_seconds() * 1000)
            work.append((job.finished_at - job.started_at).total_seconds() * 1000 - model)
            model_ms.append(model)
            overheads.append(elapsed - model)
        print(f"\n1. overhead per job (enqueue -> entry visible, minus model time), n={args.jobs}")
        print(
            f"   median {statistics.median(overheads):.1f} ms · p95 {percentile(overheads, 95):.1f} ms"
            f" · mean {statistics.mean(overheads):.1f} ms · max {max(overheads):.1f} ms"
        )
        print(
            f"   (end to end median {statistics.median(totals):.1f} ms, of which model call "
            f"median {statistics.median(model_ms):.1f} ms)   target < 200 ms: "
            f"{'MET' if statistics.median(overheads) < 200 else 'NOT MET'}"
        )

        print(
            f"   breakdown (medians): request call {statistics.median(request_ms):.1f} ms · "
            f"queue pickup {statistics.median(pickup):.1f} ms · job work without model "
            f"{statistics.median(work):.1f} ms"
        )
        load = os.getloadavg()[0]
        print(
            f"   CPU per job: request {cpu_request / args.jobs * 1000:.1f} ms + workers "
            f"{cpu_workers / args.jobs * 1000:.1f} ms (incl. the scripted reply parsing); "
            f"load average {load:.1f} on {os.cpu_count()} CPUs"
        )

        # 2. Throughput.
        sessions = [new_session() for _ in range(args.sessions)]
        total = args.sessions * args.rounds
        llm.push(*[text("## Goal\nthroughput summary")] * total)
        job_seconds = 0.0
        wall_started = time.perf_counter()
        done = 0
        for r in range(args.rounds):
            for s in sessions:
                add_turn(s, 100 + r, filler=300)
            started = time.perf_counter()
            ids = [jobs.request_compaction(s, actor=owner).pk for s in sessions]
            wait_done(ids)
            job_seconds += time.perf_counter() - started
            done += Job.objects.filter(pk__in=ids, status="done").count()
        wall = time.perf_counter() - wall_started
        entries = Entry.objects.filter(session__in=sessions, type="compaction").count()
        print(
            f"\n2. throughput: {total} compactions over {args.sessions} sessions, "
            f"{args.workers} workers"
        )
        print(
            f"   {done} done, {entries} compaction entries; job phases {job_seconds:.1f} s "
            f"-> {total / job_seconds:.1f} jobs/s ({job_seconds / total * 1000:.1f} ms/job);"
            f" wall incl. appending turns {wall:.1f} s"
        )
        if done != total or entries != total:
            print("   MISMATCH: some jobs did not finish with exactly one entry")
            return 1
        return 0
    finally:
        stop_workers(workers)
        if redis_proc is not None:
            redis_proc.terminate()
        llm.close()
        from django.db import connections

        connections.close_all()
        if pg_db:
            drop_postgres(args, pg_db)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
