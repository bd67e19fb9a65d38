"""Time and peak memory of every page of a hostile session, under an address-space cap.

Usage:  .venv/bin/python bench/page_limits_bench.py [--message-mb 50] [--field-mb 10] [--cap-mb 2048]

Writes, into a throwaway embedded database (SQLite under a temporary PIWEB_VAR_DIR), a
session whose header `cwd` is --field-mb long, with a user message of --message-mb, an
assistant tool call whose arguments and provider are --field-mb each, a tool result of
--message-mb and a `custom` entry with a --field-mb type and data. Then it renders every
page, partial and download of it through tests/support/capped_pages.py (Django's test
client in a process capped with RLIMIT_AS) and prints status, size, seconds and the
process's peak RSS after each request. Before the page limits, the inspector of such a
session (a 10 MB cwd) grew the server past 22 GB.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

BUILD = """
import json, os, sys
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from sessions_app.models import ShareLink
from sessions_app.services import sharing
from tests.e2e.test_page_memory_cap import huge_session
import tests.e2e.test_page_memory_cap as m
m.MESSAGE_CHARS, m.FIELD_CHARS = int(sys.argv[1]), int(sys.argv[2])
owner = get_user_model().objects.create_user("bench")
session, ids = huge_session(owner)
link = sharing.create_link(session, actor=owner, leaf_pi_id=ids["result"], scope=ShareLink.Scope.SUBTREE)
print(json.dumps({"sid": session.pi_id, "ids": ids, "token": link.token}))
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--message-mb", type=int, default=50)
    parser.add_argument("--field-mb", type=int, default=10)
    parser.add_argument("--cap-mb", type=int, default=2048)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="piweb-page-bench-") as var:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        env["PIWEB_VAR_DIR"] = var
        env["PIWEB_CHANNEL_PREFIX"] = "page-bench"  # (no Redis runs: publishes just fail)
        built = subprocess.run(
            [sys.executable, "-c", BUILD, str(args.message_mb * 10**6), str(args.field_mb * 10**6)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        made = json.loads(built.stdout.strip().splitlines()[-1])
        sid, ids, token = made["sid"], made["ids"], made["token"]
        urls = [
            "/",
            f"/s/{sid}/",
            f"/s/{sid}/?target={ids['user']}",
            f"/s/{sid}/tree/",
            f"/s/{sid}/inspect/",
            f"/s/{sid}/chat/transcript/",
            f"/s/{sid}/compare/?a={ids['result']}&b={ids['side']}",
            f"/l/{token}/",
            *(f"/s/{sid}/e/{ids[k]}/" for k in ("user", "assistant", "result", "side")),
            f"/s/{sid}/e/{ids['user']}/text/",
            f"/s/{sid}/export/html/",
            f"/s/{sid}/export/md/",
            f"/s/{sid}/export/jsonl/",
            f"/s/{sid}/e/{ids['user']}/raw/",
        ]
        print(
            f"session: {args.message_mb} MB messages, {args.field_mb} MB fields; "
            f"cap {args.cap_mb} MB (RLIMIT_AS)"
        )
        done = subprocess.run(
            [sys.executable, "tests/support/capped_pages.py", str(args.cap_mb), "bench"],
            input=json.dumps([{"url": u} for u in urls]),
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
        )
        print(f"{'page':<44} {'status':>6} {'bytes':>12} {'s':>6} {'peak RSS MB':>12}")
        for line in done.stdout.splitlines():
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            url = r["url"].replace(sid, "<sid>").replace(token, "<token>")
            for key, value in ids.items():
                url = url.replace(value, f"<{key}>")
            print(
                f"{url:<44} {r['status']!s:>6} {r['bytes']:>12,} {r['seconds']:>6.2f} "
                f"{r['peak_rss_mb']:>12,}"
            )
        if done.returncode != 0:
            print(done.stderr[-2000:])
        return done.returncode


if __name__ == "__main__":
    sys.exit(main())
