"""services/usage.py: the stored usage; import, append and fork keep it current, the
migration backfills it, `session_usage --json` gives pi's breakdown. (The dashboard is
tested in test_usage_selectors.py.)"""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime

import pytest
from django.core.management import call_command
from django.urls import reverse

from sessions_app.core.usage import usage_breakdown
from sessions_app.models import Entry, Session, UsageDaily
from sessions_app.selectors.usage import dashboard, session_summary
from sessions_app.services import sessions
from sessions_app.services.fork import fork_session
from sessions_app.services.importer import import_jsonl_stream
from tests.support import page_walk
from tests.support.pi16_sessions import assert_same_breakdown
from tests.support.pi16_sessions import sessions_dir as pi16_dir
from tests.support.pi16_sessions import usage_cases as pi16_cases
from tests.support.pi_files import header, import_lines, message, usage_line
from tests.support.usage_data import costly_entries, import_costly, usage
from tests.support.web import client_for

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]

SID = "11111111-2222-3333-4444-555555555555"  # the session id pi_files.header() writes

COSTLY = [
    ("anthropic/claude-opus-4-5", 4600, 1.5),
    ("anthropic/claude-sonnet-4-5", 4700, 0.25),
    ("anthropic/claude-haiku-4-5", 15, 0.125),
    ("openai/gpt-5.1-codex", 330, 0.05),
    ("Tools/summaries", 2500, 0.035),
]


def session_usage_json(session) -> dict:
    out = io.StringIO()
    call_command("session_usage", session.pi_id, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_imported_pi16_sessions_store_pis_breakdown(make_user):
    owner = make_user("importer")
    for case in pi16_cases():
        with open(pi16_dir() / case["file"], "rb") as fh:
            session = import_jsonl_stream(fh, owner).session
        printed = session_usage_json(session)
        assert set(printed) == {"breakdown", "totals"}
        assert_same_breakdown(printed["breakdown"], case["usageBreakdown"])
        assert printed["totals"]["tokens"] == sum(r["tokens"] for r in case["usageBreakdown"])


def test_every_usage_source_is_stored_and_summed(make_user):
    session = import_costly(make_user("alice"))
    breakdown = session_summary(session)["breakdown"]
    assert [(r["key"], r["tokens"]) for r in breakdown] == [(k, t) for k, t, _ in COSTLY]
    for row, (_, _, cost) in zip(breakdown, COSTLY, strict=True):
        assert row["cost"] == pytest.approx(cost, abs=1e-9)
    assert breakdown == usage_breakdown(costly_entries())
    session.refresh_from_db()
    assert session.usage_tokens == sum(t for _, t, _ in COSTLY)
    assert session.usage_cost == pytest.approx(1.96)
    assert session.usage_models.split("\n") == [k for k, _, _ in COSTLY[:4]]
    # The session's own times, not the import's.
    assert session.started_at == datetime(2026, 1, 10, 9, 59, tzinfo=UTC)
    assert session.last_activity_at == datetime(2026, 1, 11, 9, 0, 3, tzinfo=UTC)
    days = session_summary(session)["totals"]["byDay"]
    assert [(d["day"], d["tokens"]) for d in days] == [("2026-01-10", 7380), ("2026-01-11", 4765)]
    tool = Entry.objects.get(session=session, pi_id="e0000003")
    assert (tool.usage_key, tool.usage_input, tool.usage_output) == ("Tools/summaries", 40, 10)


def test_append_updates_the_stored_usage(make_user):
    owner = make_user("bob")
    session = import_costly(owner)
    sessions.append_entry(
        session,
        {
            "type": "message",
            "timestamp": "2026-02-01T00:00:00.000Z",
            "message": {
                "role": "assistant",
                "content": [],
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage(7, 3, cost=0.5),
                "stopReason": "stop",
                "timestamp": 1,
            },
        },
    )
    session.refresh_from_db()
    breakdown = session_summary(session)["breakdown"]
    assert breakdown[1] == {"key": "anthropic/claude-sonnet-4-5", "cost": 0.75, "tokens": 4710}
    assert session.usage_cost == pytest.approx(2.46)
    assert session.last_activity_at == datetime(2026, 2, 1, tzinfo=UTC)
    assert UsageDaily.objects.filter(session=session, day=date(2026, 2, 1)).count() == 1


def test_an_imported_pi_fork_counts_its_copied_history_once(make_user):
    from tests.support.pi_files import as_file, jsonl_text

    owner = make_user("owner6")
    source = import_costly(owner)
    copied = costly_entries()[:7]
    extra = {
        "type": "usage",
        "id": "f0000001",
        "parentId": "e0000007",
        "timestamp": "2026-01-12T08:00:00.000Z",
        "provider": "openai",
        "model": "gpt-5.1-codex",
        "usage": usage(10, 0, cost=0.5),
    }
    header = {
        "type": "session",
        "version": 3,
        "id": "bbbbbbbb-0000-4000-8000-000000000001",
        "timestamp": "2026-01-12T07:00:00.000Z",
        "cwd": "/work/costly",
        "parentSession": f"/home/me/.pi/agent/sessions/x/2026_{source.pi_id}.jsonl",
    }
    text = jsonl_text(header, [*copied, extra])
    fork = import_jsonl_stream(as_file(text), owner, filename="fork.jsonl").session
    assert fork.parent_id == source.pk
    assert Entry.objects.filter(session=fork, copied=True).count() == 7
    own = session_summary(fork)["totals"]["cost"]
    assert own == pytest.approx(0.25 + 0.01 + 0.05 + 0.02 + 1.5 + 0.5)
    assert fork.usage_cost == pytest.approx(own)
    both = dashboard(Session.objects.filter(pk__in=[source.pk, fork.pk]))
    assert both.totals.cost == pytest.approx(1.96 + 0.5)


def test_the_migration_backfills_what_import_would_have_stored(make_user):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("sessions_app.migrations.0003_usage_columns")
    owner = make_user("owner7")
    source = import_costly(owner)
    fork = fork_session(source, "e0000007", actor=owner)
    stored = {s.pk: (session_summary(s), s.usage_cost) for s in (source, fork)}
    UsageDaily.objects.all().delete()
    Entry.objects.update(usage_key="", usage_input=0, usage_cost=0, copied=False)
    Session.objects.update(usage_cost=0, usage_tokens=0, usage_models="", last_activity_at=None)
    migration.backfill_usage(apps, None)
    for session in (source, fork):
        session.refresh_from_db()
        summary, cost = stored[session.pk]
        assert session_summary(session) == summary
        assert session.usage_cost == pytest.approx(cost)
    assert Entry.objects.filter(session=fork, copied=True).count() == 7
    assert dashboard(Session.objects.all()).totals.cost == pytest.approx(1.96)


@pytest.mark.embedded
@pytest.mark.django_db
def test_absurd_token_counts_import_cleanly_and_pages_render(make_user):
    owner = make_user("faults-owner")
    lines = [
        header(SID),
        message("u1", None),
        usage_line("a1", "u1", input=1e308, totalTokens=1e308),
        message("u2", "a1"),
        usage_line("a2", "u2", output=10**30, cacheRead=-(10**30)),
        usage_line("a3", "a2", input=float("1e300"), output=5, cost={"total": 1e308}),
        usage_line("a4", "a3", cost={"total": 1e308}),  # the sum of the costs overflows
    ]
    report = import_lines(owner, lines)
    assert report.status == "created" and report.entries_added == 6
    session = Session.objects.get(pi_id=SID)
    for row in Entry.objects.filter(session=session).values(
        "usage_input", "usage_output", "usage_cache_read", "usage_cache_write"
    ):
        assert all(abs(value) < 2**62 for value in row.values())
    assert 0 < session.usage_tokens < 2**62
    pages = page_walk.walk(session, owner)
    assert page_walk.problems(pages) == []
    assert client_for(owner).get(reverse("sessions_app:usage_dashboard")).status_code == 200
