"""Usage dashboard and sessions list latency on a large corpus.

Run from the repository root::

    .venv/bin/python bench/usage_bench.py                  # PostgreSQL and SQLite
    .venv/bin/python bench/usage_bench.py --backends sqlite --sessions 100 --entries 100000

Each backend runs in a child process on a FRESH database (as bench/search_bench.py, whose
generator loads the corpus: 1,000 sessions, 1,000,000 entries, 60 users in 12 teams and
a lead who sees everything). Every assistant entry then gets usage (a model out of four,
token counts and a cost drawn from its id) in its usage columns, and the `UsageDaily`
rows are built from them, as import would have kept them. Then 9,000 more sessions
(no entries, usage totals set) make 10,000 for the sessions list.

Measured:
- the dashboard (`selectors.usage.dashboard`, what `/usage/` runs): every session the
  user can see, and the team scope, over random date ranges, as a team member (about a
  sixth of the sessions) and as the lead (all of them): p50 / p95 / max;
- the sessions list (`GET /` through Django's test client: query, count, filter menus and
  template, i.e. the server's whole time) for the lead over 10,000 sessions, default
  order, sorted by cost, and filtered by model: p50 / p95 / max.
Targets: dashboard p95 < 300 ms on PostgreSQL; sessions list < 300 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import search_bench  # noqa: E402  (the corpus generator)
from support import child_report, print_report  # noqa: E402

VAR = REPO / "var" / "bench-usage"
SEED = 20261201
MODELS = (
    "anthropic/claude-sonnet-4-5",
    "anthropic/claude-opus-4-5",
    "openai/gpt-5.1-codex",
    "google/gemini-2.5-pro",
)
LIST_SESSIONS = 10_000


def _add_usage(vendor: str) -> None:
    """Usage on every assistant entry, then the daily rows, in SQL (the corpus is big)."""
    from django.db import connection

    from sessions_app.models import Entry, UsageDaily

    entry, daily = Entry._meta.db_table, UsageDaily._meta.db_table
    key_case = (
        "CASE (id % 4) " + " ".join(f"WHEN {i} THEN '{m}'" for i, m in enumerate(MODELS)) + " END"
    )
    day_expr = (
        "CAST(substr(timestamp, 1, 10) AS date)"
        if vendor == "postgresql"
        else "substr(timestamp, 1, 10)"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {entry} SET usage_key = {key_case}, usage_input = 1000 + id % 5000, "
            "usage_output = 100 + id % 900, usage_cache_read = (id % 7) * 3000, "
            "usage_cache_write = (id % 3) * 500, usage_cost = (id % 100) / 1000.0 "
            "WHERE role = 'assistant'"
        )
        cursor.execute(
            f"INSERT INTO {daily} (session_id, day, key, copied, input, output, cache_read, "
            "cache_write, cost, entries, first_seq) "
            f"SELECT session_id, {day_expr}, usage_key, copied, SUM(usage_input), "
            "SUM(usage_output), SUM(usage_cache_read), SUM(usage_cache_write), SUM(usage_cost), "
            f"COUNT(*), MIN(seq) FROM {entry} WHERE usage_key <> '' "
            f"GROUP BY session_id, {day_expr}, usage_key, copied"
        )
    _session_totals()


def _session_totals() -> None:
    from django.db.models import Sum

    from sessions_app.models import Session, UsageDaily

    sums = {
        row["session_id"]: row
        for row in UsageDaily.objects.values("session_id").annotate(
            i=Sum("input"),
            o=Sum("output"),
            cr=Sum("cache_read"),
            cw=Sum("cache_write"),
            c=Sum("cost"),
        )
    }
    changed = []
    for session in Session.objects.all():
        row = sums.get(session.pk)
        if row is None:
            continue
        session.usage_tokens = row["i"] + row["o"] + row["cr"] + row["cw"]
        session.usage_cost = row["c"]
        session.usage_models = "\n".join(MODELS)
        session.started_at = session.created_at - timedelta(days=session.pk % 365)
        session.last_activity_at = session.started_at + timedelta(hours=session.pk % 48)
        changed.append(session)
    Session.objects.bulk_update(
        changed,
        ["usage_tokens", "usage_cost", "usage_models", "started_at", "last_activity_at"],
        batch_size=2000,
    )


def _more_sessions(lead, count: int) -> None:
    """Sessions without entries (usage totals set) so the list has LIST_SESSIONS."""
    from django.utils import timezone

    from sessions_app.models import Session, SessionShare, Team

    rng = random.Random(SEED + 2)
    now = timezone.now()
    extra = []
    for i in range(count):
        started = now - timedelta(days=rng.randrange(400), minutes=rng.randrange(1440))
        extra.append(
            Session(
                pi_id=f"list-{i:05d}",
                cwd=f"/work/repo{i % 40}/service{i % 7}",
                header_timestamp=started.isoformat(),
                name=f"list session {i}",
                owner=lead,
                started_at=started,
                last_activity_at=started + timedelta(hours=rng.randrange(72)),
                entry_count=rng.randrange(2000),
                usage_tokens=rng.randrange(10_000_000),
                usage_cost=rng.random() * 40,
                usage_models="\n".join(rng.sample(MODELS, 2)),
            )
        )
    Session.objects.bulk_create(extra, batch_size=2000)
    everyone = Team.objects.get(name=f"team{search_bench.N_TEAMS}")
    SessionShare.objects.bulk_create(
        [
            SessionShare(session=s, team=everyone)
            for s in Session.objects.filter(pi_id__startswith="list-")
        ],
        batch_size=2000,
    )


def _stats(times: list[float]) -> dict:
    times = sorted(times)
    return {
        "runs": len(times),
        "p50": statistics.median(times),
        "p95": times[max(0, int(len(times) * 0.95) - 1)],
        "max": times[-1],
    }


def _timed(call, runs: int) -> dict:
    for _ in range(3):
        call(0)
    times = []
    for i in range(runs):
        started = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - started) * 1000)
    return _stats(times)


def child(backend: str, args) -> None:
    import django

    os.environ["DJANGO_SETTINGS_MODULE"] = "piweb.settings"
    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from sessions_app.models import Session
    from sessions_app.selectors.sessions import visible_sessions
    from sessions_app.selectors.usage import dashboard

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    if args.reuse:
        from django.contrib.auth import get_user_model

        if Session.objects.count() != max(args.sessions, LIST_SESSIONS):
            raise SystemExit("--reuse: the bench database does not hold this corpus")
        users = get_user_model().objects
        loaded = {"member": users.get(username="user0"), "lead": users.get(username="lead")}
    else:
        loaded = search_bench._load(args, connection.vendor)
        _add_usage(connection.vendor)
        _more_sessions(loaded["lead"], max(0, LIST_SESSIONS - args.sessions))
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    load_seconds = time.perf_counter() - started

    rng = random.Random(SEED)
    ranges = []
    for _ in range(args.runs):
        start = date(2026, 1, 1) + timedelta(days=rng.randrange(300))
        ranges.append((start, start + timedelta(days=rng.choice((7, 30, 90, 365)))))
    ranges[0] = (None, None)  # all time
    report = {
        "backend": backend,
        "sessions": args.sessions,
        "entries": args.entries,
        "load_seconds": round(load_seconds, 1),
        "dashboard": {},
        "list": {},
    }
    for name in ("member", "lead"):
        user = loaded[name]
        scope = visible_sessions(user)

        def run(i, scope=scope):
            board = dashboard(scope, *ranges[i % len(ranges)])
            return board.totals.cost

        stats = _timed(run, args.runs)
        stats["sessions"] = scope.count()
        report["dashboard"][name] = stats
    team = loaded["member"].teams.order_by("pk").first()
    team_scope = Session.objects.filter(pk__in=team.shares.values("session_id"))
    stats = _timed(lambda i: dashboard(team_scope, *ranges[i % len(ranges)]).totals.cost, args.runs)
    stats["sessions"] = team_scope.count()
    report["dashboard"]["team"] = stats

    client = Client()
    client.force_login(loaded["lead"])
    pages = {
        "default": "/",
        "by cost": "/?sort=-cost",
        "model filter": "/?model=google%2Fgemini-2.5-pro&sort=tokens",
        "page 150": "/?sort=-started&page=150",
    }
    for label, url in pages.items():

        def get(i, url=url):
            response = client.get(url, HTTP_HOST="localhost")
            assert response.status_code == 200, response.status_code

        report["list"][label] = _timed(get, max(10, args.runs // 4))
    report["list_sessions"] = visible_sessions(loaded["lead"]).count()
    print_report(report)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", default="postgresql,sqlite")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("PIWEB_BENCH_PG_URL", "postgres://127.0.0.1:5432/postgres"),
    )
    parser.add_argument("--pg-db", default="usage_bench")
    parser.add_argument(
        "--reuse", action="store_true", help="measure the corpus left by the previous run"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    VAR.mkdir(parents=True, exist_ok=True)
    search_bench.VAR = VAR
    if args.child:
        child(args.child, args)
        return 0
    reports = []
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        env = dict(os.environ, PIWEB_VAR_DIR=str(VAR))
        try:
            env["DATABASE_URL"] = search_bench._fresh_database(backend, args)
        except Exception as exc:
            print(f"{backend}: skipped ({exc.__class__.__name__}: {exc})")
            continue
        print(
            f"== {backend}: loading {args.entries:,} entries in {args.sessions:,} sessions …",
            flush=True,
        )
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                backend,
                "--sessions",
                str(args.sessions),
                "--entries",
                str(args.entries),
                "--runs",
                str(args.runs),
            ]
            + (["--reuse"] if args.reuse else []),
            env=env,
            capture_output=True,
            text=True,
        )
        report = child_report(proc)
        if report is None:
            return 1
        reports.append(report)
    print()
    print(
        f"{'backend':<11} {'what':<26} {'sessions':>8} {'runs':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}"
    )
    for r in reports:
        for name, s in r["dashboard"].items():
            print(
                f"{r['backend']:<11} {'dashboard ' + name:<26} {s['sessions']:>8} {s['runs']:>5} "
                f"{s['p50']:>8.1f} {s['p95']:>8.1f} {s['max']:>8.1f}"
            )
        for name, s in r["list"].items():
            print(
                f"{r['backend']:<11} {'list ' + name:<26} {r['list_sessions']:>8} {s['runs']:>5} "
                f"{s['p50']:>8.1f} {s['p95']:>8.1f} {s['max']:>8.1f}"
            )
        print(f"{r['backend']:<11} load {r['load_seconds']} s ({r['entries']:,} entries)")
    pg = [r for r in reports if r["backend"] == "postgresql"]
    if pg and pg[0]["entries"] >= 1_000_000:
        worst = max(s["p95"] for s in pg[0]["dashboard"].values())
        worst_list = max(s["p95"] for s in pg[0]["list"].values())
        print(
            f"\nPostgreSQL dashboard p95 < 300 ms: {'OK' if worst < 300 else 'OVER TARGET'} "
            f"(worst {worst:.1f} ms); list p95 < 300 ms: "
            f"{'OK' if worst_list < 300 else 'OVER TARGET'} (worst {worst_list:.1f} ms)"
        )
    print("(figures from a shared machine under other developers' load)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
