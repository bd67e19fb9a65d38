"""Store benchmark: import a 100 MB / 100,000-entry pi session, load the context at a
deep leaf, append 1,000 entries, on PostgreSQL and on SQLite.

The generated session is a 100,000-entry main chain (the deep leaf is ~99,800 entries
down) with short side branches and a compaction every 500 entries, as pi would make at
a 128k-200k token window; the context at the leaf is what follows the last compaction.
Entry ids are random 8-hex-digit strings, as pi writes them.

Run: .venv/bin/python bench/store_bench.py [--entries N] [--keep]
Creates its own databases (PostgreSQL `piweb_store_bench` on 127.0.0.1:5432, or
PIWEB_BENCH_PG_URL; a SQLite file under var/store-bench/) and drops them afterwards.
Each measurement runs in a fresh child process, so its peak RSS is its own.
Targets: import >= 20 MB/s with peak RSS < 300 MB; deep-leaf context < 200 ms on PostgreSQL.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from calibration import json_loads_mb_per_s
from support import pg_admin, pg_name, words_text

REPO = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO / "var" / "store-bench"
PG_URL = os.environ.get("PIWEB_BENCH_PG_URL", "postgres://127.0.0.1:5432/piweb_store_bench")
SESSION_ID = "b3nch000-0000-4000-8000-000000000001"

# --- the generated session ---------------------------------------------------------------


def generate(path: Path, entries: int, target_bytes: int, seed: int = 7) -> dict:
    """A pi v3 file: a main chain with short side branches and periodic compactions."""
    sys.path.insert(0, str(REPO))
    from sessions_app.core.jsonl import serialize_entry

    rng = random.Random(seed)
    per_entry = max(200, target_bytes // entries)
    header = {
        "type": "session",
        "version": 3,
        "id": SESSION_ID,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/bench/project",
    }
    # Entry ids as pi makes them: 8 random hex digits (so index inserts land anywhere).
    ids = [f"{n:08x}" for n in rng.sample(range(1 << 32), entries)]
    written = 0
    main_parent = None
    deep_leaf = None
    kept_since_compaction: list[str] = []
    with path.open("w", encoding="utf-8") as fh:
        fh.write(serialize_entry(header) + "\n")
        i = 0
        while i < entries:
            eid = ids[i]
            ts = f"2026-01-{1 + (i // 86400) % 28:02d}T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"
            kind = i % 4
            # pi compacts when the context nears the window: every ~500 entries here
            # (~500 KB, ~125k tokens), keeping the last 40.
            if i and i % 500 == 0 and kept_since_compaction:
                entry = {
                    "type": "compaction",
                    "id": eid,
                    "parentId": main_parent,
                    "timestamp": ts,
                    "summary": words_text(rng, per_entry * 3),
                    "firstKeptEntryId": kept_since_compaction[-40],
                    "tokensBefore": 150000,
                    "details": {"readFiles": ["a.py"], "modifiedFiles": ["b.py"]},
                }
            elif kind == 0:
                entry = {
                    "type": "message",
                    "id": eid,
                    "parentId": main_parent,
                    "timestamp": ts,
                    "message": {
                        "role": "user",
                        "content": words_text(rng, per_entry // 3),
                        "timestamp": i,
                    },
                }
            elif kind == 1:
                entry = {
                    "type": "message",
                    "id": eid,
                    "parentId": main_parent,
                    "timestamp": ts,
                    "message": {
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": words_text(rng, per_entry // 3)},
                            {
                                "type": "toolCall",
                                "id": f"call_{eid}",
                                "name": "bash",
                                "arguments": {"command": "pytest -q tests/"},
                            },
                        ],
                        "provider": "openai",
                        "model": "gpt-bench",
                        "usage": {
                            "input": 1000,
                            "output": 200,
                            "cacheRead": 0,
                            "cacheWrite": 0,
                            "totalTokens": 1200,
                        },
                        "stopReason": "toolUse",
                        "timestamp": i,
                    },
                }
            elif kind == 2:
                entry = {
                    "type": "message",
                    "id": eid,
                    "parentId": main_parent,
                    "timestamp": ts,
                    "message": {
                        "role": "toolResult",
                        "toolCallId": f"call_{ids[i - 1]}",
                        "toolName": "bash",
                        "content": [{"type": "text", "text": words_text(rng, per_entry * 2)}],
                        "isError": False,
                        "timestamp": i,
                    },
                }
            else:
                entry = {
                    "type": "message",
                    "id": eid,
                    "parentId": main_parent,
                    "timestamp": ts,
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": words_text(rng, per_entry // 2)}],
                        "provider": "openai",
                        "model": "gpt-bench",
                        "stopReason": "stop",
                        "timestamp": i,
                    },
                }
            line = serialize_entry(entry) + "\n"
            fh.write(line)
            written += len(line.encode())
            main_parent = eid
            deep_leaf = eid
            kept_since_compaction.append(eid)
            i += 1
            # A short side branch every 997 entries (somebody went back and retried).
            if i % 997 == 0 and i + 2 < entries:
                side_parent = ids[i - 3]
                for _ in range(2):
                    sid = ids[i]
                    side = {
                        "type": "message",
                        "id": sid,
                        "parentId": side_parent,
                        "timestamp": ts,
                        "message": {
                            "role": "user",
                            "content": "retry " + words_text(rng, 80),
                            "timestamp": i,
                        },
                    }
                    line = serialize_entry(side) + "\n"
                    fh.write(line)
                    written += len(line.encode())
                    side_parent = sid
                    i += 1
    return {"bytes": path.stat().st_size, "entries": entries, "deep_leaf": deep_leaf}


def calibrate(path: Path, limit: int = 20_000_000) -> float:
    """How fast this machine parses the file's lines with json.loads alone (MB/s): the
    ceiling any importer written in Python has here."""
    return json_loads_mb_per_s([path], limit)


# --- child processes ---------------------------------------------------------------------


def _setup_django(database_url: str):
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("PIWEB_VAR_DIR", str(BENCH_DIR / "var"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "piweb.settings"
    sys.path.insert(0, str(REPO))
    import django

    django.setup()


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_import(database_url: str, arg: str) -> dict:
    _setup_django(database_url)
    from django.contrib.auth import get_user_model

    from sessions_app.selectors import paths
    from sessions_app.services.importer import finish_import, import_jsonl_stream

    path, leaf = arg.split("::")
    owner, _ = get_user_model().objects.get_or_create(username="bench")
    rss_before = _peak_rss_mb()
    size = os.path.getsize(path)
    # The import proper: from the file to a committed session (tree, context, export).
    # finish_import (VACUUM, search indexing) follows the commit, in a worker for web
    # uploads and inline for the command; it is timed apart.
    start = time.perf_counter()
    with open(path, "rb") as fh:
        report = import_jsonl_stream(fh, owner, filename=path, after_commit="off")
    seconds = time.perf_counter() - start
    import_rss = _peak_rss_mb()
    start = time.perf_counter()
    paths.load_context(report.session, leaf)
    cold_before = time.perf_counter() - start
    start = time.perf_counter()
    finish_import(report.session.pk, report.first_new_seq)
    after_seconds = time.perf_counter() - start
    return {
        "status": report.status,
        "entries": report.entries_added,
        "seconds": round(seconds, 2),
        "mb_per_s": round(size / 1e6 / seconds, 1),
        "peak_rss_mb": round(import_rss, 1),
        "rss_after_django_setup_mb": round(rss_before, 1),
        "deep_leaf_context_before_finish_import_ms": round(cold_before * 1000, 1),
        "finish_import_s": round(after_seconds, 2),
        "with_finish_import_mb_per_s": round(size / 1e6 / (seconds + after_seconds), 1),
        "peak_rss_with_finish_import_mb": round(_peak_rss_mb(), 1),
    }


def child_context(database_url: str, leaf: str) -> dict:
    _setup_django(database_url)
    from sessions_app.core.messages import build_session_context
    from sessions_app.models import Session
    from sessions_app.selectors import paths

    session = Session.objects.get(pi_id=SESSION_ID)
    full = {"load_path": [], "build_context": [], "total": []}
    fast = []
    depth = messages = 0
    for _ in range(3):
        t0 = time.perf_counter()
        path = paths.load_path(session, leaf)
        t1 = time.perf_counter()
        context = build_session_context(path, leaf)
        t2 = time.perf_counter()
        full["load_path"].append((t1 - t0) * 1000)
        full["build_context"].append((t2 - t1) * 1000)
        full["total"].append((t2 - t0) * 1000)
        depth, messages = len(path), len(context["messages"])
        del path
    paths._PARENT_CACHE.clear()  # cold: nothing known about the session's links yet
    t0 = time.perf_counter()
    quick = paths.load_context(session, leaf)
    cold = (time.perf_counter() - t0) * 1000
    for _ in range(5):
        t0 = time.perf_counter()
        quick = paths.load_context(session, leaf)
        fast.append((time.perf_counter() - t0) * 1000)
    assert quick == context, "load_context disagrees with load_path + build_session_context"
    return {
        "path_length": depth,
        "context_messages": messages,
        "load_context_cold_ms": round(cold, 1),
        "load_context_ms_median": round(statistics.median(fast), 1),
        "load_context_ms_best": round(min(fast), 1),
        **{f"full_{k}_ms_median": round(statistics.median(v), 1) for k, v in full.items()},
        "peak_rss_mb": round(_peak_rss_mb(), 1),
    }


def child_append(database_url: str, count: int) -> dict:
    _setup_django(database_url)
    from sessions_app.models import Session
    from sessions_app.services import sessions

    session = Session.objects.get(pi_id=SESSION_ID)
    start = time.perf_counter()
    for i in range(count):
        sessions.append_entry(
            session,
            {
                "type": "message",
                "message": {"role": "user", "content": f"appended {i}", "timestamp": i},
            },
        )
    seconds = time.perf_counter() - start
    return {
        "appended": count,
        "seconds": round(seconds, 2),
        "ms_per_append": round(seconds * 1000 / count, 2),
    }


REDIS_URL = os.environ.get("PIWEB_BENCH_REDIS_URL", "redis://127.0.0.1:6379/11")


def _redis_env() -> dict:
    """The real Redis when it answers (appends publish events, as in production)."""
    try:
        import redis

        redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping()
    except Exception:
        return {}
    return {"REDIS_URL": REDIS_URL}


def run_child(kind: str, database_url: str, arg: str) -> dict:
    env = dict(
        os.environ, DATABASE_URL=database_url, PIWEB_VAR_DIR=str(BENCH_DIR / "var"), **_redis_env()
    )
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, database_url, arg],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"{kind} on {database_url} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- databases -----------------------------------------------------------------------------


def migrate(database_url: str) -> None:
    env = dict(os.environ, DATABASE_URL=database_url, PIWEB_VAR_DIR=str(BENCH_DIR / "var"))
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        env=env,
        cwd=REPO,
        check=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--appends", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the databases and the file")
    parser.add_argument("--only", choices=["postgresql", "sqlite"], help="one backend only")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, url, arg = args.child
        result = {"import": child_import, "context": child_context}.get(kind)
        value = result(url, arg) if result else child_append(url, int(arg))
        print(json.dumps(value))
        return 0

    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    (BENCH_DIR / "var").mkdir(exist_ok=True)
    path = BENCH_DIR / "bench-session.jsonl"
    t0 = time.perf_counter()
    info = generate(path, args.entries, args.megabytes * 1_000_000)
    print(
        f"generated {info['entries']} entries, {info['bytes'] / 1e6:.1f} MB "
        f"in {time.perf_counter() - t0:.1f}s; deep leaf {info['deep_leaf']}"
    )
    print(
        f"calibration: {calibrate(path):.0f} MB/s for plain json.loads of these lines on this machine"
    )
    sqlite_file = BENCH_DIR / "bench.sqlite3"
    backends = []
    if args.only in (None, "postgresql"):
        backends.append(("postgresql", PG_URL))
    if args.only in (None, "sqlite"):
        backends.append(("sqlite", f"sqlite:///{sqlite_file}"))
    results = {}
    ok = True
    try:
        for name, url in backends:
            if name == "postgresql":
                pg_admin(PG_URL, f'DROP DATABASE IF EXISTS "{pg_name(PG_URL)}"')
                pg_admin(PG_URL, f'CREATE DATABASE "{pg_name(PG_URL)}"')
            else:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{sqlite_file}{suffix}").unlink(missing_ok=True)
            migrate(url)
            imported = run_child("import", url, f"{path}::{info['deep_leaf']}")
            print(f"[{name}] import: {json.dumps(imported)}")
            context = run_child("context", url, info["deep_leaf"])
            print(f"[{name}] context at the deep leaf: {json.dumps(context)}")
            appended = run_child("append", url, str(args.appends))
            print(f"[{name}] append: {json.dumps(appended)}")
            results[name] = (imported, context, appended)
    finally:
        if not args.keep:
            if any(n == "postgresql" for n, _ in backends):
                pg_admin(PG_URL, f'DROP DATABASE IF EXISTS "{pg_name(PG_URL)}"')
            shutil.rmtree(BENCH_DIR, ignore_errors=True)
    print("targets:")
    for name, (imported, context, _appended) in results.items():
        fast = imported["mb_per_s"] >= 20
        lean = imported["peak_rss_mb"] < 300
        print(
            f"  {name}: import {imported['mb_per_s']} MB/s ({'ok' if fast else 'MISSED'} >= 20), "
            f"peak RSS {imported['peak_rss_mb']} MB ({'ok' if lean else 'MISSED'} < 300); "
            f"then finish_import (search index; VACUUM on PostgreSQL, log checkpoint on SQLite) {imported['finish_import_s']} s "
            f"({imported['with_finish_import_mb_per_s']} MB/s counting both)"
        )
        if name == "postgresql":
            quick = max(context["load_context_ms_median"], context["load_context_cold_ms"]) < 200
            print(
                f"  {name}: deep-leaf context {context['load_context_ms_median']} ms, "
                f"first (cold) load {context['load_context_cold_ms']} ms "
                f"({'ok' if quick else 'MISSED'} < 200; right after the commit, before "
                f"finish_import: {imported['deep_leaf_context_before_finish_import_ms']} ms); "
                f"the whole {context['path_length']}-entry path with every payload: "
                f"{context['full_total_ms_median']} ms"
            )
            ok = ok and quick
        ok = ok and fast and lean
    print("all targets met" if ok else "some targets missed (see above)")
    load = os.getloadavg()
    print(f"(load average {load[0]:.1f} on {os.cpu_count()} CPUs while measuring)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
