"""Load benchmark: N clients browse a 1,000-entry session on `runpiweb --web W`.

Self-contained: a fresh SQLite database (``--database`` takes a PostgreSQL URL instead) and
embedded Redis in a temp dir, a real ``manage.py runpiweb --web W``. Run from the
repository root::

    .venv/bin/python bench/load_bench.py [--web W] [--clients 20] [--seconds 60] [--sockets 100]

1. builds a 1,000-entry session (tests/support/tree_data.bulk_session) owned by one user;
2. starts runpiweb with W web processes (default: the README's advice for this machine,
   one per core), logs in ``--clients`` clients (each its own login, as that user) and opens
   ``--sockets`` websockets on the session, held open for the whole run;
3. each client browses in a loop for ``--seconds``: the session page, its tree partial, the
   leaf's entry, the sessions list; then prints requests/s, errors, the websockets still
   open, and p50 / p95 per page (targets: session page p95 < 1 s, other pages < 300 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
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

TARGETS = {"session page": 1.0}  # seconds at p95; every other page 0.3


def default_web() -> int:
    """The README's advice: one web process per core (the workers mostly wait)."""
    return max(1, os.cpu_count() or 1)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--web", type=int, default=default_web(), help="runpiweb --web")
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--sockets", type=int, default=100)
    p.add_argument("--entries", type=int, default=1000)
    return p.parse_args()


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]


def main():
    args = parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="piweb-load-"))
    env = {
        "PIWEB_VAR_DIR": str(tmp),
        "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
        "PIWEB_CELERY_QUEUE": f"load-{uuid.uuid4().hex[:6]}",
        "PIWEB_CHANNEL_PREFIX": f"load{uuid.uuid4().hex[:6]}",
        "PIWEB_WORKSPACE_ROOTS": str(tmp / "workspaces"),
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    use_environment(env)
    port = free_port()
    log_path = tmp / "runpiweb.log"
    argv = [sys.executable, "manage.py", "runpiweb", "--port", str(port), "--web", str(args.web)]
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
        deadline = time.monotonic() + 180
        while "piweb is running" not in log_path.read_text(errors="replace"):
            if time.monotonic() > deadline or runpiweb.poll() is not None:
                raise RuntimeError(log_path.read_text(errors="replace")[-3000:])
            time.sleep(0.2)
        session_id, leaf = build_session(args, tmp)  # (with the server's Redis up)
        print(
            f"runpiweb --web {args.web} on {os.cpu_count()} cores; {args.clients} clients, "
            f"{args.sockets} websockets, {args.seconds:.0f} s, a {args.entries}-entry session"
        )
        asyncio.run(load(args, port, session_id, leaf))
    finally:
        os.killpg(runpiweb.pid, signal.SIGTERM)
        try:
            runpiweb.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(runpiweb.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


def build_session(args, tmp: Path) -> tuple[str, str]:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection

    from tests.support.tree_data import bulk_session

    user = get_user_model().objects.create_user("load", password="load-bench-only")
    workspace = tmp / "workspaces" / str(user.pk) / "s"
    workspace.mkdir(parents=True)
    session = bulk_session(user, str(workspace), args.entries, 0, name="load bench")
    leaf = session.leaf.pi_id
    connection.close()
    return session.pi_id, leaf


async def login(base: str):
    import httpx

    client = httpx.AsyncClient(base_url=base, timeout=60)
    page = await client.get("/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    done = await client.post(
        "/login/",
        data={"username": "load", "password": "load-bench-only", "csrfmiddlewaretoken": token},
        headers={"Referer": base + "/login/"},
    )
    if done.status_code not in (200, 302) or "sessionid" not in client.cookies:
        raise RuntimeError(f"login failed: {done.status_code}")
    return client


async def load(args, port: int, session_id: str, leaf: str) -> None:
    import websockets

    base = f"http://127.0.0.1:{port}"
    clients = [await login(base) for _ in range(args.clients)]
    pages = {
        "session page": f"/s/{session_id}/",
        "tree partial": f"/s/{session_id}/tree/",
        "entry": f"/s/{session_id}/e/{leaf}/",
        "sessions list": "/",
    }
    cookie = f"sessionid={clients[0].cookies['sessionid']}"
    sockets = []
    for _ in range(args.sockets):
        sockets.append(
            await websockets.connect(
                f"ws://127.0.0.1:{port}/ws/sessions/{session_id}/",
                additional_headers={"Cookie": cookie, "Origin": base},
                max_size=None,
            )
        )
    drains = [asyncio.create_task(_drain(ws)) for ws in sockets]
    times: dict[str, list[float]] = {name: [] for name in pages}
    errors: list[str] = []
    stop_at = time.monotonic() + args.seconds

    async def browse(index: int, client) -> None:
        order = list(pages.items())
        step = index  # the clients start on different pages
        while time.monotonic() < stop_at:
            name, url = order[step % len(order)]
            step += 1
            started = time.monotonic()
            try:
                response = await client.get(url)
                if response.status_code != 200:
                    errors.append(f"{name}: {response.status_code}")
                    continue
            except Exception as exc:  # (counted, the run goes on)
                errors.append(f"{name}: {exc!r}")
                continue
            times[name].append(time.monotonic() - started)

    started = time.monotonic()
    await asyncio.gather(*(browse(i, c) for i, c in enumerate(clients)))
    took = time.monotonic() - started
    alive = sum(1 for task in drains if not task.done())
    for ws in sockets:
        await ws.close()
    for client in clients:
        await client.aclose()
    total = sum(len(v) for v in times.values())
    print(
        f"{total / took:.1f} requests/s ({total} in {took:.0f} s), {len(errors)} errors, "
        f"{alive}/{len(sockets)} websockets open at the end"
    )
    if errors:
        print("  first errors:", errors[:3])
    print(f"{'page':<15} {'count':>6} {'p50 ms':>8} {'p95 ms':>8} {'target':>8}")
    for name, values in times.items():
        if not values:
            print(f"{name:<15} {0:>6}")
            continue
        target = TARGETS.get(name, 0.3)
        p95 = percentile(values, 95)
        verdict = "met" if p95 < target else "MISSED"
        print(
            f"{name:<15} {len(values):>6} {statistics.median(values) * 1000:>8.0f} "
            f"{p95 * 1000:>8.0f} {f'<{target * 1000:.0f}':>8} {verdict}"
        )


async def _drain(ws) -> None:
    """Read what the server pushes until the socket closes (a closed one ends the task)."""
    try:
        async for _message in ws:
            pass
    except Exception:
        return


if __name__ == "__main__":
    main()
