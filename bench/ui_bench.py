"""Server time of the session page and the tree partials for big sessions.

Usage:  .venv/bin/python bench/ui_bench.py [--sizes 1000,10000,100000] [--repeat 5]
        .venv/bin/python bench/ui_bench.py --browser [--repeat 9] [--no-tokens]
            (the page in headless Chromium for the 1,002-entry real-shaped session:
             first load, node click, drawer, streamed token; bench/ui_browser_bench.py)

Uses the configured database (DATABASE_URL; default SQLite under var/) but creates and
drops its own test database (test_<name>), so it never touches real data. For each
size it writes a session with a main chain plus side branches (10,000 entries ↔ 200
branches, scaled for the other sizes), then times Django's test client (a real request
through middleware, views, queries and templates, without a network) for:

- the session page (everything on it: tree, chat transcript, jobs and review panels),
- the tree partial alone (what live refreshes fetch),
- the entry pane of the leaf, and one lazy expansion of a folded run,
- the chat panel's transcript partial (the chat area's; most of the rest of the page).

"page CPU" is the process CPU median of the page request (the server time on SQLite; the
Python side on PostgreSQL). The warm-up builds the tree index, which is then kept per
version of the session; "cold CPU" times the page with that cache emptied before every
request, as the first view after the session changed.

Each size runs twice: with the side branches, and as a plain chain (`--shapes`).
The goal (issue 38): the session page of a 10,000-entry chain and of the 10,000-entry,
200-branch tree in under 200 ms of server time, on SQLite and PostgreSQL.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")


CPU_MEDIANS: dict[str, float] = {}  # the last median CPU time of each timed label


def timed(fn, repeat: int, label: str = "") -> tuple[float, object]:
    """Median wall-clock seconds of `repeat` calls after a warm-up, and the last result.
    The median CPU seconds go to CPU_MEDIANS[label]: on a shared machine the wall clock
    measures the scheduler, and with SQLite the process's CPU time is the server time."""
    fn()  # warm-up (template compilation, first connection)
    times, cpus, result = [], [], None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        result = fn()
        cpus.append(time.process_time() - cpu)
        times.append(time.perf_counter() - start)
    CPU_MEDIANS[label] = statistics.median(cpus)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--shapes", default="tree,chain", help="tree (size // 50 branches) and/or chain"
    )
    parser.add_argument("--browser", action="store_true", help="the browser bench instead")
    parser.add_argument(
        "--no-tokens", action="store_true", help="(--browser) skip the streamed-token timing"
    )
    args = parser.parse_args()
    if args.browser:
        sys.path.insert(0, str(REPO / "bench"))
        from ui_browser_bench import run

        run(max(args.repeat, 3), with_tokens=not args.no_tokens)
        return

    import django

    django.setup()
    import re

    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    from sessions_app.selectors.panels.tree import forget_tree_indexes
    from tests.support.tree_data import bulk_session

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        user = get_user_model().objects.create_user("bench", password="bench-only")
        client = Client()
        client.force_login(user)
        print(f"database: {connection.vendor}; median of {args.repeat} runs after one warm-up")
        print(
            f"{'entries':>8} {'branches':>8} {'page s':>8} {'tree s':>8} {'entry s':>8} {'run s':>8} {'chat s':>8} {'rows':>6} {'page KB':>8} {'setup s':>8} {'page CPU':>8} {'cold CPU':>8}"
        )
        shapes = [shape for shape in args.shapes.split(",") if shape]
        for size, shape in [
            (int(s), shape) for s in args.sizes.split(",") if s for shape in shapes
        ]:
            branches = max(1, size // 50) if shape == "tree" else 0
            start = time.perf_counter()
            session = bulk_session(
                user, "/tmp/bench-workspace", size, branches, name=f"bench {size} {shape}"
            )
            setup = time.perf_counter() - start
            base = f"/s/{session.pi_id}/"
            page_s, page = timed(lambda b=base: client.get(b), args.repeat, "page")
            assert page.status_code == 200, page.status_code

            def cold(b=base):
                forget_tree_indexes()
                return client.get(b)

            timed(cold, args.repeat, "cold")
            tree_s, tree = timed(lambda b=base: client.get(b + "tree/"), args.repeat)
            html = tree.content.decode()
            rows = html.count('class="tn ')
            leaf = session.leaf.pi_id
            entry_s, _ = timed(lambda b=base, leaf=leaf: client.get(f"{b}e/{leaf}/"), args.repeat)
            fold = re.search(r'hx-get="([^"]*/tree/run/[^"]*)"', html)
            run_s = float("nan")
            if fold:
                run_url = fold.group(1).replace("&amp;", "&")
                run_s, _ = timed(lambda u=run_url: client.get(u), args.repeat)
            # the chat panel's transcript (another area), for the page-time breakdown
            chat_s = float("nan")
            if client.get(base + "chat/transcript/").status_code == 200:
                chat_s, _ = timed(lambda b=base: client.get(b + "chat/transcript/"), args.repeat)
            print(
                f"{size:>8} {branches:>8} {page_s:>8.3f} {tree_s:>8.3f} {entry_s:>8.3f} {run_s:>8.3f} {chat_s:>8.3f} {rows:>6} {len(page.content) / 1024:>8.0f} {setup:>8.1f} {CPU_MEDIANS['page']:>8.3f} {CPU_MEDIANS['cold']:>8.3f}",
                flush=True,
            )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
