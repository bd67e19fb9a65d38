"""Review queues and datasets at scale.

Run from the repository root::

    .venv/bin/python bench/review_bench.py                     # SQLite (default)
    .venv/bin/python bench/review_bench.py --backends postgresql,sqlite --answers 100000

In a child process on a FRESH database: 1,000 sessions, each one question answered
`answers / sessions` times (every answer its own branch), every answer scored by one
reviewer; a team with one number score; a queue of every answer that ends a branch.

Measured:
- next item (`services.review_queues.take_next`, what reviewer mode asks for each item)
  by two reviewers in turn, each scoring what it took (`score_item`, not timed):
  p50 / p95 / max. Target: p50 < 100 ms with 100,000 scored answers;
- the dataset export (`selectors.datasets.dataset_lines` over the queue's scored answers,
  the first `--export` rows, chat format): rows per second and MB/s. Target: 10,000 rows
  at 5 MB/s or better.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import search_bench  # noqa: E402  (fresh databases)
from support import child_report, print_report  # noqa: E402

VAR = REPO / "var" / "bench-review"
SESSIONS = 1000


def _line(payload: dict) -> str:
    return json.dumps(payload, separators=(",", ":"))


def _load(answers: int):
    """The corpus, written in bulk (the services would take an hour at this size)."""
    from django.contrib.auth import get_user_model

    from sessions_app.models import (
        Entry,
        Score,
        ScoreConfig,
        Session,
        SessionShare,
        Team,
        TeamMembership,
    )

    users = get_user_model().objects
    owner, r1, r2 = (users.create(username=name) for name in ("owner", "r1", "r2"))
    team = Team.objects.create(name="graders")
    for user, role in ((owner, "admin"), (r1, "reviewer"), (r2, "reviewer")):
        TeamMembership.objects.create(team=team, user=user, role=role)
    config = ScoreConfig.objects.create(
        team=team, name="quality", kind="number", min_value=1, max_value=5
    )
    per_session = max(1, answers // SESSIONS)
    for s in range(SESSIONS):
        session = Session.objects.create(
            pi_id=str(uuid.uuid4()),
            owner=owner,
            cwd="/work/bench",
            header_timestamp="2026-12-01T00:00:00.000Z",
        )
        SessionShare.objects.create(session=session, team=team, role="viewer")
        root_id = f"q{s:07x}"
        root = Entry.objects.create(
            session=session, pi_id=root_id, seq=0, type="message", role="user",
            timestamp="2026-12-01T00:00:00.000Z",
            line=_line({"type": "message", "id": root_id, "parentId": None,
                        "timestamp": "2026-12-01T00:00:00.000Z",
                        "message": {"role": "user", "content": "Which parser should we use here?", "timestamp": 1}}),
        )  # fmt: skip
        rows = []
        for n in range(per_session):
            pi_id = f"a{s:05x}{n:05x}"
            rows.append(Entry(
                session=session, pi_id=pi_id, parent=root, parent_pi_id=root_id, seq=n + 1,
                type="message", role="assistant", timestamp="2026-12-01T00:00:01.000Z",
                usage_key="scripted/scripted-model",
                line=_line({"type": "message", "id": pi_id, "parentId": root_id,
                            "timestamp": "2026-12-01T00:00:01.000Z",
                            "message": {"role": "assistant", "provider": "scripted", "model": "scripted-model",
                                        "content": [{"type": "text", "text": f"Answer {n}: " + "use the recursive descent parser; " * 20}],
                                        "stopReason": "stop", "timestamp": 2}}),
            ))  # fmt: skip
        Entry.objects.bulk_create(rows, batch_size=2000)
        Session.objects.filter(pk=session.pk).update(
            leaf=rows[-1].pk if rows[-1].pk else None,
            next_seq=per_session + 1,
            entry_count=per_session + 1,
        )
        Score.objects.bulk_create(
            (
                Score(config=config, session=session, entry=e, value=1 + e.seq % 5, author=owner)
                for e in rows
            ),
            batch_size=2000,
        )
    return team, owner, r1, r2, config


def _stats(times: list[float]) -> dict:
    times = sorted(times)
    return {
        "runs": len(times),
        "p50": statistics.median(times) * 1000,
        "p95": times[int(len(times) * 0.95) - 1] * 1000,
        "max": times[-1] * 1000,
    }


def child(backend: str, args) -> None:
    import django

    os.environ["DJANGO_SETTINGS_MODULE"] = "piweb.settings"
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from sessions_app.models import Entry, Score
    from sessions_app.selectors import datasets
    from sessions_app.selectors.sessions import ListFilters
    from sessions_app.services import review_queues

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    team, owner, r1, r2, config = _load(args.answers)
    queue = review_queues.create_queue(
        team, actor=owner, name="all", filters=ListFilters(), scope="branch_ends"
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    load_seconds = time.perf_counter() - started

    times = []
    for i in range(args.takes):
        reviewer = (r1, r2)[i % 2]
        began = time.perf_counter()
        item = review_queues.take_next(queue, actor=reviewer)
        times.append(time.perf_counter() - began)
        review_queues.score_item(queue, item.pk, config.pk, "3", actor=reviewer)

    answers = datasets.queue_answers(queue).filter(
        pk__in=Entry.objects.filter(role="assistant")
        .order_by("session_id", "seq")
        .values("pk")[: args.export]
    )
    began = time.perf_counter()
    size = rows = 0
    for line in datasets.dataset_lines(datasets.dataset_rows(answers, team.pk)):
        size += len(line.encode())
        rows += 1
    seconds = time.perf_counter() - began
    report = {
        "backend": backend,
        "load_s": load_seconds,
        "scored": Score.objects.count(),
        "items": queue.items.count(),
        "next": _stats(times),
        "export": {"rows": rows, "mb": size / 1e6, "seconds": seconds},
    }
    print_report(report)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", default="sqlite")
    parser.add_argument("--answers", type=int, default=100_000)
    parser.add_argument("--takes", type=int, default=200)
    parser.add_argument("--export", type=int, default=10_000)
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("PIWEB_BENCH_PG_URL", "postgres://127.0.0.1:5432/postgres"),
    )
    parser.add_argument("--pg-db", default="review_bench")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.reuse = False
    VAR.mkdir(parents=True, exist_ok=True)
    search_bench.VAR = VAR
    if args.child:
        child(args.child, args)
        return 0
    print(
        f"{'backend':<11} {'scored':>8} {'next p50 ms':>12} {'p95 ms':>8} {'max ms':>8} {'export rows':>12} {'MB/s':>7}"
    )
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        env = dict(os.environ, PIWEB_VAR_DIR=str(VAR))
        env["DATABASE_URL"] = search_bench._fresh_database(backend, args)
        command = [sys.executable, __file__, "--child", backend]
        for flag in ("answers", "takes", "export"):
            command += [f"--{flag}", str(getattr(args, flag))]
        proc = subprocess.run(command, env=env, capture_output=True, text=True)
        report = child_report(proc)
        if report is None:
            return 1
        r = report
        n, e = r["next"], r["export"]
        rate = e["mb"] / e["seconds"] if e["seconds"] else 0.0
        print(
            f"{r['backend']:<11} {r['scored']:>8} {n['p50']:>12.1f} {n['p95']:>8.1f} {n['max']:>8.1f} "
            f"{e['rows']:>12} {rate:>7.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
