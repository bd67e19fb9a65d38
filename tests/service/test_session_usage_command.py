"""The session_usage command: a session's tokens and cost by pi's buckets, in pi's order,
with the totals, the cache hit ratio and the days; `--json` prints the same summary the
usage pages read. Every branch of the tree counts, not only the current one."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from sessions_app.selectors.usage import session_summary
from sessions_app.services.importer import import_jsonl_stream
from tests.support.pi_files import as_file, header, jsonl_text, message
from tests.support.usage_data import assistant, import_costly, usage

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


def printed(*args) -> str:
    out = io.StringIO()
    call_command("session_usage", *args, stdout=out)
    return out.getvalue()


def test_the_breakdown_is_printed_in_pis_order_with_totals_and_days(make_user):
    session = import_costly(make_user("alice"))
    lines = printed(session.pi_id).splitlines()
    assert lines[0] == f"Session {session.pi_id}: usage by bucket (pi's order)"
    rows = [line.split() for line in lines[1:6]]
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("anthropic/claude-opus-4-5", "4,600", "$1.500000"),
        ("anthropic/claude-sonnet-4-5", "4,700", "$0.250000"),
        ("anthropic/claude-haiku-4-5", "15", "$0.125000"),
        ("openai/gpt-5.1-codex", "330", "$0.050000"),
        ("Tools/summaries", "2,500", "$0.035000"),
    ]
    total = lines[6]
    assert total.split()[:4] == ["total", "12,145", "tokens", "$1.960000"]
    assert "(input 3,950, output 695, cache read 7,000, cache write 500; cache hits 61.1%)" in (
        total
    )
    assert lines[7:] == [
        "By day (UTC):",
        "  2026-01-10           7,380 tokens  $0.330000",
        "  2026-01-11           4,765 tokens  $1.630000",
    ]


def test_json_is_the_summary_the_pages_read(make_user):
    session = import_costly(make_user("alice"))
    data = json.loads(printed(session.pi_id, "--json"))
    assert data == json.loads(json.dumps(session_summary(session)))
    assert [row["key"] for row in data["breakdown"]][0] == "anthropic/claude-opus-4-5"
    assert data["totals"]["tokens"] == 12145
    assert [day["day"] for day in data["totals"]["byDay"]] == ["2026-01-10", "2026-01-11"]


def test_every_branch_counts(make_user):
    first = assistant("b1", "openai", "gpt-x", usage(100, 10, cost=0.5))
    first["parentId"] = "u1"
    second = assistant("b2", "openai", "gpt-x", usage(200, 20, cost=0.25))
    second["parentId"] = "u1"  # a sibling: the abandoned branch counts too
    entries = [message("u1", None, text="question"), first, second]
    session = import_jsonl_stream(
        as_file(jsonl_text(header(), entries)), make_user("bob"), filename="b.jsonl"
    ).session
    data = json.loads(printed(session.pi_id, "--json"))
    assert data["breakdown"] == [{"key": "openai/gpt-x", "cost": 0.75, "tokens": 330}]


def test_a_session_without_usage_prints_zeros_and_no_ratio(make_user):
    session = import_jsonl_stream(
        as_file(jsonl_text(header(), [message("u1", None)])), make_user("carol"), filename="c"
    ).session
    lines = printed(session.pi_id).splitlines()
    assert lines[0].startswith("Session ") and len(lines) == 2
    assert lines[1].split()[:4] == ["total", "0", "tokens", "$0.000000"]
    assert lines[1].endswith("cache hits -)")


def test_an_unknown_session_is_refused(make_user):
    import_costly(make_user("alice"))
    with pytest.raises(CommandError, match="No session with id 'no-such-session'"):
        printed("no-such-session")
