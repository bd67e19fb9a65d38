"""Search latency on a large corpus: 1,000 sessions with 1,000,000 entries in total.

Run from the repository root::

    .venv/bin/python bench/search_bench.py                   # PostgreSQL and SQLite
    .venv/bin/python bench/search_bench.py --backends sqlite --sessions 100 --entries 100000

Each backend runs in a child process on a FRESH database (PostgreSQL: the database
named by --pg-db on PIWEB_BENCH_PG_URL's server, dropped and re-created; SQLite: a file
under var/bench-search/), migrated, then bulk-loaded with raw SQL (COPY on PostgreSQL,
executemany on SQLite; the full-text index is built once after the load). It then runs a
mix of queries through `selectors.search.search` — the code the search page calls, with
its visibility filter and result loading — as two users: a team member who sees about a
sixth of the sessions, and a lead who sees all of them. Prints p50 / p95 / max per
backend and user. Target: p95 < 300 ms on PostgreSQL.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from support import child_report, print_report  # noqa: E402

VAR = REPO / "var" / "bench-search"
SEED = 20261129
N_USERS = 60
N_TEAMS = 12
VOCAB = 6000
POOL = 40_000
RARE = 200_000
ROLES = ("user", "assistant", "toolResult", "assistant", "toolResult", "assistant")
TOOLS = ("read", "bash", "edit", "write", "grep")


# --- corpus -------------------------------------------------------------------------------


def _words(rng: random.Random) -> list[str]:
    syllables = [
        "ka",
        "lo",
        "mi",
        "ne",
        "ru",
        "sa",
        "ti",
        "vo",
        "ze",
        "qu",
        "bra",
        "cle",
        "dro",
        "fen",
        "gul",
    ]
    seen, out = set(), []
    while len(out) < VOCAB:
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


def _pool(rng: random.Random, words: list[str]) -> list[str]:
    from itertools import accumulate

    cum = list(accumulate(1 / (i + 1) for i in range(len(words))))  # Zipf: few common words
    texts = []
    for _ in range(POOL):
        n = rng.randint(8, 40)
        texts.append(" ".join(rng.choices(words, cum_weights=cum, k=n)))
    return texts


# --- child: one backend -------------------------------------------------------------------


def _fresh_database(backend: str, args) -> str:
    if args.reuse:
        if backend == "postgresql":
            return args.pg_url.rsplit("/", 1)[0] + "/" + args.pg_db
        return f"sqlite:///{VAR / 'search_bench.sqlite3'}"
    if backend == "postgresql":
        import dj_database_url
        import psycopg

        base = dj_database_url.parse(args.pg_url)
        conn = psycopg.connect(
            host=base["HOST"] or "127.0.0.1",
            port=base["PORT"] or 5432,
            dbname=base["NAME"] or "postgres",
            user=base["USER"] or None,
            password=base["PASSWORD"] or None,
            autocommit=True,
        )
        conn.execute(f'DROP DATABASE IF EXISTS "{args.pg_db}"')
        conn.execute(f'CREATE DATABASE "{args.pg_db}"')
        conn.close()
        url = args.pg_url.rsplit("/", 1)[0] + "/" + args.pg_db
        return url
    path = VAR / "search_bench.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return f"sqlite:///{path}"


def _columns(model, values: dict) -> tuple[list[str], callable]:
    """Every concrete column of `model`, with our values or the field default."""
    from django.db import models

    fields = model._meta.concrete_fields
    cols = [f.column for f in fields]
    defaults = {}
    for f in fields:
        if f.column in values:
            continue
        if f.has_default():
            value = f.get_default()
            defaults[f.column] = json.dumps(value) if isinstance(f, models.JSONField) else value
        elif f.null:
            defaults[f.column] = None
        else:
            defaults[f.column] = ""

    def row(own: dict) -> list:
        return [own[c] if c in own else defaults[c] for c in cols]

    return cols, row


def _bench_message(role: str, tool: str, text: str, seq: int) -> tuple[dict, str]:
    """A message of the bench's sessions, and its search text."""
    if role == "toolResult":
        message = {
            "role": role,
            "toolName": tool,
            "toolCallId": f"c{seq}",
            "content": [{"type": "text", "text": text}],
            "isError": False,
        }
    elif role == "assistant":
        message = {
            "role": role,
            "content": [
                {"type": "text", "text": text},
                {
                    "type": "toolCall",
                    "id": f"c{seq + 1}",
                    "name": tool,
                    "arguments": {"path": f"src/{tool}.py"},
                },
            ],
        }
        text = f'{text}\n{tool}({{"path": "src/{tool}.py"}})'
    else:
        message = {"role": role, "content": text}
    return message, text


def _load(args, vendor: str) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from sessions_app.models import (
        Entry,
        SearchDocument,
        Session,
        SessionShare,
        Team,
        TeamMembership,
    )

    rng = random.Random(SEED)
    words = _words(rng)
    pool = _pool(rng, words)
    User = get_user_model()
    users = User.objects.bulk_create([User(username=f"user{i}") for i in range(N_USERS)])
    lead = User.objects.create(username="lead")
    teams = Team.objects.bulk_create([Team(name=f"team{i}") for i in range(N_TEAMS + 1)])
    everyone = teams[-1]
    members = [TeamMembership(team=everyone, user=lead)]
    for i, user in enumerate(users):
        members.append(TeamMembership(team=teams[i % N_TEAMS], user=user))
        members.append(TeamMembership(team=teams[(i * 7 + 3) % N_TEAMS], user=user))
    TeamMembership.objects.bulk_create(members)
    member = users[0]

    sessions = []
    for i in range(args.sessions):
        sessions.append(
            Session(
                pi_id=f"bench-{i:05d}",
                cwd=f"/work/repo{i % 40}/service{i % 7}",
                header_timestamp="2026-01-01T00:00:00.000Z",
                name=f"bench session {i}",
                owner=users[i % N_USERS],
                entry_count=args.entries // args.sessions,
                next_seq=args.entries // args.sessions,
            )
        )
    sessions = Session.objects.bulk_create(sessions)
    shares = [SessionShare(session=s, team=everyone, role="viewer") for s in sessions]
    shares += [
        SessionShare(session=s, team=teams[rng.randrange(N_TEAMS)], role="viewer")
        for s in sessions
        if rng.random() < 0.3
    ]
    SessionShare.objects.bulk_create(shares)

    per_session = args.entries // args.sessions
    entry_cols, entry_row = _columns(
        Entry,
        {
            "id",
            "session_id",
            "pi_id",
            "parent_id",
            "seq",
            "type",
            "timestamp",
            "role",
            "tool_name",
            "preview",
            "payload",
            "token_count",
        },
    )
    doc_cols = ["entry_id", "session_id", "role", "tool_name", "date", "text"]
    entry_table, doc_table = Entry._meta.db_table, SearchDocument._meta.db_table

    started = time.perf_counter()
    next_id = 1

    def rows():
        nonlocal next_id
        for s_index, session in enumerate(sessions):
            parent = None
            base_day = s_index % 365
            for seq in range(per_session):
                pk = next_id
                next_id += 1
                role = ROLES[seq % len(ROLES)] if seq else "user"
                tool = TOOLS[(seq + s_index) % len(TOOLS)] if role != "user" else ""
                text = f"{pool[rng.randrange(POOL)]} t{rng.randrange(RARE)}"
                message, text = _bench_message(role, tool, text, seq)
                ts = f"2026-{1 + (base_day // 31) % 12:02d}-{1 + base_day % 28:02d}T12:00:00.000Z"
                payload = {
                    "type": "message",
                    "id": f"{pk:08x}",
                    "parentId": parent and f"{parent:08x}",
                    "timestamp": ts,
                    "message": message,
                }
                entry = entry_row(
                    {
                        "id": pk,
                        "session_id": session.pk,
                        "pi_id": f"{pk:08x}",
                        "parent_id": parent,
                        "seq": seq,
                        "type": "message",
                        "timestamp": ts,
                        "role": role,
                        "tool_name": tool,
                        "preview": text[:300],
                        "payload": json.dumps(payload),
                        "token_count": len(text) // 4,
                    }
                )
                doc = [pk, session.pk, role, tool, ts.replace("Z", "+00:00"), text]
                parent = pk
                yield entry, doc

    with transaction.atomic(), connection.cursor() as cursor:
        if vendor == "postgresql":
            cursor.execute("DROP INDEX IF EXISTS sessions_app_searchdoc_tsv")
            raw = cursor.cursor
            with raw.copy(f"COPY {entry_table} ({', '.join(entry_cols)}) FROM STDIN") as entry_copy:
                docs = []
                for entry, doc in rows():
                    entry_copy.write_row(entry)
                    docs.append(doc)
            with raw.copy(f"COPY {doc_table} ({', '.join(doc_cols)}) FROM STDIN") as doc_copy:
                for doc in docs:
                    doc_copy.write_row(doc)
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{entry_table}', 'id'), %s)", [next_id]
            )
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("SET LOCAL maintenance_work_mem = '512MB'")
            cursor.execute(
                f"CREATE INDEX sessions_app_searchdoc_tsv ON {doc_table} USING gin (tsv)"
            )
        else:
            migration = __import__("sessions_app.migrations.0002_search_indexes", fromlist=["x"])
            for sql in migration.SQLITE_DOWN:
                if "TRIGGER" in sql:
                    cursor.execute(sql)
            batch_e, batch_d = [], []
            e_sql = f"INSERT INTO {entry_table} ({', '.join(entry_cols)}) VALUES ({', '.join(['%s'] * len(entry_cols))})"
            d_sql = f"INSERT INTO {doc_table} ({', '.join(doc_cols)}) VALUES ({', '.join(['%s'] * len(doc_cols))})"
            for entry, doc in rows():
                batch_e.append(entry)
                batch_d.append(doc)
                if len(batch_e) >= 20000:
                    cursor.executemany(e_sql, batch_e)
                    cursor.executemany(d_sql, batch_d)
                    batch_e, batch_d = [], []
            if batch_e:
                cursor.executemany(e_sql, batch_e)
                cursor.executemany(d_sql, batch_d)
            for sql in migration.SQLITE_UP[1:]:  # triggers, then 'rebuild' fills the FTS index
                cursor.execute(sql)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    load_seconds = time.perf_counter() - started
    return {
        "words": words,
        "pool": pool,
        "member": member,
        "lead": lead,
        "load_seconds": load_seconds,
    }


def _queries(rng: random.Random, words: list[str], pool: list[str]) -> list[tuple[str, dict]]:
    from sessions_app.selectors.search import SearchFilters

    out = []
    for _ in range(40):
        out.append((f"t{rng.randrange(RARE)}", {}))  # rare: a handful of rows
    for _ in range(30):
        out.append((rng.choice(words[300:2000]), {}))  # medium
    for _ in range(20):
        out.append((rng.choice(words[:15]), {}))  # very common: ~10% of all rows
    for _ in range(20):
        out.append((f"{rng.choice(words[:50])} {rng.choice(words[200:1500])}", {}))
    for _ in range(20):
        text = rng.choice(pool).split()
        i = rng.randrange(max(1, len(text) - 2))
        out.append((f'"{text[i]} {text[i + 1]}"', {}))
    for _ in range(10):
        out.append(
            (rng.choice(words[:100]), {"filters": SearchFilters(role="toolResult", tool="bash")})
        )
    for _ in range(10):
        out.append((rng.choice(words[100:600]), {"filters": SearchFilters(cwd="/work/repo7/")}))
    for _ in range(10):
        out.append((f"{rng.choice(words[:30])} -{rng.choice(words[:30])}", {}))
    rng.shuffle(out)
    return out


def _measure(user, queries) -> dict:
    from sessions_app.selectors import search

    for q, kw in queries[:5]:  # warm caches
        search.search(user, q, kw.get("filters"))
    times, hits = [], 0
    for q, kw in queries:
        started = time.perf_counter()
        result = search.search(user, q, kw.get("filters"))
        times.append((time.perf_counter() - started) * 1000)
        hits += len(result.hits)
    times.sort()
    return {
        "queries": len(times),
        "p50": statistics.median(times),
        "p95": times[max(0, int(len(times) * 0.95) - 1)],
        "max": times[-1],
        "avg_hits": hits / len(times),
    }


def child(backend: str, args) -> None:
    import django

    os.environ["DJANGO_SETTINGS_MODULE"] = "piweb.settings"
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from sessions_app.selectors.sessions import visible_sessions

    call_command("migrate", verbosity=0)
    if args.reuse:
        from django.contrib.auth import get_user_model

        from sessions_app.models import SearchDocument

        if SearchDocument.objects.count() != args.entries:
            raise SystemExit(
                "--reuse: the bench database does not hold this corpus; run without it"
            )
        rng = random.Random(SEED)
        words = _words(rng)
        users = get_user_model().objects
        loaded = {
            "words": words,
            "pool": _pool(rng, words),
            "member": users.get(username="user0"),
            "lead": users.get(username="lead"),
            "load_seconds": 0.0,
        }
    else:
        loaded = _load(args, connection.vendor)
    rng = random.Random(SEED + 1)
    queries = _queries(rng, loaded["words"], loaded["pool"])
    report = {
        "backend": backend,
        "sessions": args.sessions,
        "entries": args.entries,
        "load_seconds": round(loaded["load_seconds"], 1),
        "users": {},
    }
    for name in ("member", "lead"):
        user = loaded[name]
        stats = _measure(user, queries)
        stats["visible_sessions"] = visible_sessions(user).count()
        report["users"][name] = stats
    print_report(report)


# --- parent: run each backend, print the table -------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", default="postgresql,sqlite")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("PIWEB_BENCH_PG_URL", "postgres://127.0.0.1:5432/postgres"),
    )
    parser.add_argument("--pg-db", default="review_search_bench")
    parser.add_argument(
        "--reuse", action="store_true", help="query the corpus left by the previous run"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    VAR.mkdir(parents=True, exist_ok=True)
    if args.child:
        child(args.child, args)
        return 0
    reports = []
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        env = dict(os.environ, PIWEB_VAR_DIR=str(VAR))
        try:
            env["DATABASE_URL"] = _fresh_database(backend, args)
        except Exception as exc:
            print(f"{backend}: skipped ({exc.__class__.__name__}: {exc})")
            continue
        print(
            f"== {backend}: {'reusing' if args.reuse else 'loading'} {args.entries:,} entries "
            f"in {args.sessions:,} sessions …",
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
        f"{'backend':<11} {'user':<7} {'sees':>5} {'queries':>7} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'load s':>7}"
    )
    for r in reports:
        for name, s in r["users"].items():
            print(
                f"{r['backend']:<11} {name:<7} {s['visible_sessions']:>5} {s['queries']:>7} "
                f"{s['p50']:>8.1f} {s['p95']:>8.1f} {s['max']:>8.1f} {r['load_seconds']:>7}"
            )
    pg = [s["p95"] for r in reports if r["backend"] == "postgresql" for s in r["users"].values()]
    if pg and args.entries >= 1_000_000:
        verdict = "OK" if max(pg) < 300 else "OVER TARGET"
        print(f"\nPostgreSQL p95 target < 300 ms: {verdict} (worst p95 {max(pg):.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
