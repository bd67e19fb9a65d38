"""Every page of a session with a 50 MB message and a 10 MB field renders under a 2 GB
address-space cap (`resource.setrlimit(RLIMIT_AS)`).

The pages are requested through Django's test client in a process of their own
(tests/support/capped_pages.py), so the cap never touches the test runner. Before the
page limits, the inspector of such a session grew the server to 22.7 GB.
"""

import json
import subprocess
import sys

import pytest

from sessions_app.models import ShareLink
from sessions_app.services import sessions, sharing
from tests.support.processes import REPO

pytestmark = [pytest.mark.embedded, pytest.mark.django_db(transaction=True)]

CAP_MB = 2048
MESSAGE_CHARS = 50_000_000
FIELD_CHARS = 10_000_000


def huge_session(owner):
    session = sessions.create_session(owner=owner, cwd="/a" * (FIELD_CHARS // 2), name="huge")
    ids = {}
    ids["user"] = sessions.append_entry(
        session, {"type": "message", "message": {"role": "user", "content": "A" * MESSAGE_CHARS}}
    ).pi_id
    ids["assistant"] = sessions.append_entry(
        session,
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Running it."},
                    {
                        "type": "toolCall",
                        "id": "c1",
                        "name": "bash",
                        "arguments": {"command": "x" * FIELD_CHARS},
                    },
                ],
                "provider": "p" * FIELD_CHARS,
                "model": "m",
                "usage": {"input": 1, "output": 1, "totalTokens": 2},
                "stopReason": "toolUse",
            },
        },
    ).pi_id
    ids["result"] = sessions.append_entry(
        session,
        {
            "type": "message",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "bash",
                "content": [{"type": "text", "text": "line\n" * (MESSAGE_CHARS // 5)}],
                "isError": False,
            },
        },
    ).pi_id
    ids["side"] = sessions.append_entry(
        session,
        {"type": "custom", "customType": "t" * FIELD_CHARS, "data": {"blob": "d" * FIELD_CHARS}},
        parent_pi_id=ids["user"],
    ).pi_id
    session.refresh_from_db()
    return session, ids


def test_every_page_of_a_huge_session_renders_under_a_2_gb_cap(make_user, child_env, settings):
    owner = make_user("huge-owner")
    session, ids = huge_session(owner)
    link = sharing.create_link(
        session, actor=owner, leaf_pi_id=ids["result"], scope=ShareLink.Scope.SUBTREE
    )
    sid = session.pi_id
    pages = [
        "/",
        f"/s/{sid}/",
        f"/s/{sid}/?target={ids['user']}",
        f"/s/{sid}/tree/",
        f"/s/{sid}/inspect/",
        f"/s/{sid}/inspect/?leaf={ids['user']}",
        f"/s/{sid}/chat/transcript/",
        f"/s/{sid}/compare/?a={ids['result']}&b={ids['side']}",
        f"/s/{sid}/review/",
        f"/s/{sid}/sharing/",
        f"/l/{link.token}/",
        f"/l/{link.token}/?leaf={ids['user']}",
        *(f"/s/{sid}/e/{ids[key]}/" for key in ("user", "assistant", "result", "side")),
        *(f"/s/{sid}/e/{ids[key]}/text/" for key in ("user", "result")),
        f"/s/{sid}/e/{ids['user']}/text/?from=49900000",
    ]
    downloads = [
        f"/s/{sid}/export/html/",
        f"/s/{sid}/export/md/",
        f"/s/{sid}/export/jsonl/",
        f"/l/{link.token}/export/html/",
        f"/l/{link.token}/export/md/",
        f"/s/{sid}/e/{ids['user']}/raw/",
    ]
    requests = [{"url": url} for url in pages + downloads]
    requests.append({"url": f"/s/{sid}/e/{ids['user']}/", "htmx": True})
    done = subprocess.run(
        [sys.executable, "tests/support/capped_pages.py", str(CAP_MB), owner.username],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=child_env,
        timeout=1200,
    )
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    report = "\n".join(json.dumps(r) for r in results) + "\n" + done.stderr[-3000:]
    assert done.returncode == 0, report
    assert [r["url"] for r in results] == [r["url"] for r in requests], report
    for result in results:
        assert result["status"] == 200, report
        assert result["peak_rss_mb"] < CAP_MB, report
    for result in results[: len(pages)]:  # pages are capped, downloads stream
        assert result["bytes"] <= settings.PIWEB_MAX_RESPONSE_BYTES, report
    jsonl = next(r for r in results if r["url"].endswith("/export/jsonl/"))
    assert jsonl["bytes"] > MESSAGE_CHARS + 3 * FIELD_CHARS  # the whole session, streamed
    print(report)  # the figures, with -s
