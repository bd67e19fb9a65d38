"""Render piweb pages under an address-space cap, in a process of their own.

Run by tests/e2e/test_page_limits.py (and usable by hand) as

    python tests/support/capped_pages.py CAP_MB USERNAME < urls.json

with DATABASE_URL etc. in the environment. It caps the process with
`resource.setrlimit(RLIMIT_AS)` before Django loads anything heavy, logs USERNAME in
through the test client, GETs (or POSTs) every request of the JSON list on stdin, and
prints one JSON line per request: status, response bytes, seconds, peak RSS so far. A
request that needs more memory than the cap dies with MemoryError (or the process is
killed), and the caller sees it.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time


def peak_rss_kb() -> int:
    """This process's peak resident size (VmHWM: unlike ru_maxrss it does not carry over
    the parent's peak across fork + exec)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main() -> int:
    cap_mb = int(sys.argv[1])
    username = sys.argv[2]
    requests = json.loads(sys.stdin.read())
    if cap_mb > 0:
        cap = cap_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client(raise_request_exception=False, HTTP_HOST="127.0.0.1")
    if username != "-":
        client.force_login(get_user_model().objects.get(username=username))
    for item in requests:
        method = item.get("method", "get")
        headers = {"HTTP_HX_REQUEST": "true"} if item.get("htmx") else {}
        started = time.monotonic()
        try:
            if method == "post":
                response = client.post(item["url"], item.get("data") or {}, **headers)
            else:
                response = client.get(item["url"], **headers)
            if response.streaming:
                size = sum(len(chunk) for chunk in response.streaming_content)
            else:
                size = len(response.content)
            status = response.status_code
        except MemoryError:
            status, size = "MemoryError", -1
        elapsed = time.monotonic() - started
        peak_mb = peak_rss_kb() / 1024
        print(
            json.dumps(
                {
                    "url": item["url"],
                    "status": status,
                    "bytes": size,
                    "seconds": round(elapsed, 2),
                    "peak_rss_mb": round(peak_mb),
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
