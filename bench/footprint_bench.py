"""Footprint benchmark: the processes and memory of `make run` at rest, and after 4 users
ran agent turns at once.

Self-contained: a fresh SQLite database and embedded Redis in a temp dir, the scripted
model server of tests/support (it speaks the OpenAI wire protocol), and a real
``manage.py runpiweb`` with make run's defaults. Run from the repository root::

    .venv/bin/python bench/footprint_bench.py [--users 4] [--turns 3] [--separate-workers]

1. starts runpiweb, waits for the banner, then until every process is idle (CPU time
   still for 3 s);
2. prints each process (RSS, USS: the memory only it holds) and the totals; the target of
   the default layout is at most 5 processes and 350 MB USS in all;
3. ``--users`` users each send ``--turns`` agent turns at once (every reply a tool call
   then a text, so each turn runs a bash command in the sandbox), waits until done and
   idle, and prints the same table again.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from support import free_port, use_environment  # noqa: E402

MAX_PROCESSES, MAX_USS_MB = 5, 350


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--users", type=int, default=4)
    p.add_argument("--turns", type=int, default=3, help="agent turns per user")
    p.add_argument("--separate-workers", action="store_true", help="runworkers' layout")
    return p.parse_args()


def wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


def tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def wait_idle(pid: int, quiet: float = 3.0, timeout: float = 120) -> None:
    """Until the CPU time of the whole tree has not grown for `quiet` seconds (within
    0.05 s: the workers' heartbeats and the supervisor's polling)."""

    def cpu() -> float:
        total = 0.0
        for p in tree(pid):
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total

    deadline = time.monotonic() + timeout
    last, since = cpu(), time.monotonic()
    while time.monotonic() - since < quiet:
        if time.monotonic() > deadline:
            raise RuntimeError("the processes did not become idle")
        time.sleep(0.5)
        now = cpu()
        if now - last > 0.05 * (quiet / 3):
            last, since = now, time.monotonic()


def table(pid: int, title: str) -> tuple[int, float, float]:
    rows, rss, uss = [], 0, 0
    for p in tree(pid):
        try:
            info = p.memory_full_info()
            cmd = " ".join(p.cmdline())
        except psutil.NoSuchProcess:
            continue
        rss, uss = rss + info.rss, uss + info.uss
        rows.append((info.rss, info.uss, p.pid, _short(cmd)))
    print(f"\n{title}")
    print(f"{'pid':>8} {'RSS MB':>8} {'USS MB':>8}  process")
    for r, u, pid_, cmd in rows:
        print(f"{pid_:>8} {r / 2**20:8.1f} {u / 2**20:8.1f}  {cmd}")
    print(f"{len(rows):>8} {rss / 2**20:8.1f} {uss / 2**20:8.1f}  in all ({len(rows)} processes)")
    return len(rows), rss / 2**20, uss / 2**20


def _short(cmd: str) -> str:
    for key, name in (
        ("supervise.py", "supervisor (piweb/supervise.py)"),
        ("manage.py runpiweb", "runpiweb (Django loaded)"),
        ("redis-server", "embedded redis-server"),
        ("piweb.server", "daphne (piweb.server)"),
    ):
        if key in cmd:
            return name
    if "celery" in cmd:
        queue = cmd.split(" -Q ")[1].split()[0] if " -Q " in cmd else ""
        pool = "threads" if "-P threads" in cmd else "queue pool" if "-P custom" in cmd else ""
        return f"celery worker {pool} ({queue})".replace("  ", " ")
    return cmd[:70]


def main():
    args = parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="piweb-footprint-"))
    from tests.support.scripted_llm import ScriptedLLM

    llm = ScriptedLLM()
    env = {
        "PIWEB_VAR_DIR": str(tmp),
        "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
        "PIWEB_CELERY_QUEUE": f"foot-{uuid.uuid4().hex[:6]}",
        "PIWEB_CHANNEL_PREFIX": f"foot{uuid.uuid4().hex[:6]}",
        "PIWEB_WORKSPACE_ROOTS": str(tmp / "workspaces"),
        "PIWEB_MODEL_PROFILES": (
            '{"scripted": {"base_url": "' + llm.base_url + '", "api_key": "bench", '
            '"model": "scripted-model", "context_window": 128000, "max_output": 4096}}'
        ),
        "PIWEB_LLM_BASE_URL": "",
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    use_environment(env)
    log_path = tmp / "runpiweb.log"
    argv = [sys.executable, "manage.py", "runpiweb", "--port", str(free_port())]
    if args.separate_workers:
        argv.append("--separate-workers")
    with log_path.open("wb") as log:
        runpiweb = subprocess.Popen(
            argv,
            cwd=REPO,
            env=dict(os.environ),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait(lambda: "piweb is running" in log_path.read_text(errors="replace"), 180, "runpiweb")
        for line in log_path.read_text(errors="replace").splitlines():
            if line.startswith("Running:"):
                print(line)
        wait_idle(runpiweb.pid)
        count, _rss, uss = table(runpiweb.pid, "Idle, after start:")
        if not args.separate_workers:
            verdict = "met" if count <= MAX_PROCESSES and uss <= MAX_USS_MB else "MISSED"
            print(f"target: at most {MAX_PROCESSES} processes, {MAX_USS_MB} MB USS: {verdict}")
        took = turns(args, tmp, llm)
        wait_idle(runpiweb.pid)
        table(
            runpiweb.pid,
            f"Idle, after {args.users} users ran {args.turns} agent turns each at once "
            f"({took:.1f} s):",
        )
    finally:
        os.killpg(runpiweb.pid, signal.SIGTERM)
        try:
            runpiweb.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(runpiweb.pid, signal.SIGKILL)
        llm.close()
        shutil.rmtree(tmp, ignore_errors=True)


def turns(args, tmp: Path, llm) -> float:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection

    from sessions_app.models import Job
    from sessions_app.services import chat, sessions
    from tests.support.scripted_llm import text, tool_call

    users = [
        get_user_model().objects.create_user(f"user{i}-{uuid.uuid4().hex[:4]}", password="x")
        for i in range(args.users)
    ]
    mine = []
    for user in users:
        cwd = tmp / "workspaces" / str(user.pk) / "s"
        cwd.mkdir(parents=True)
        mine.append(
            (user, sessions.create_session(owner=user, cwd=str(cwd), model_profile="scripted"))
        )
    total = args.users * args.turns
    for i in range(total):
        llm.push(tool_call("bash", {"command": f"echo turn {i} && ls"}), text(f"done {i}"))
    started = time.monotonic()
    errors: list[str] = []

    def user_turns(user, session):
        try:
            for t in range(args.turns):
                job = chat.send_message(session, user, f"turn {t}: list the files")
                wait(
                    lambda job=job: (
                        Job.objects.filter(pk=job.pk).exclude(status__in=Job.ACTIVE).exists()
                    ),
                    180,
                    "a turn",
                )
                status = Job.objects.get(pk=job.pk).status
                if status != "done":
                    errors.append(f"{user.username}: turn {t} ended {status}")
        finally:
            connection.close()

    threads = [threading.Thread(target=user_turns, args=pair) for pair in mine]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.monotonic() - started
    print(f"\n{total} agent turns of {args.users} users at once: {took:.1f} s", end="")
    print(f"; {len(errors)} failed: {errors[:3]}" if errors else ", all done")
    return took


if __name__ == "__main__":
    main()
