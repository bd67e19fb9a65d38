"""Stored usage: import, append and fork keep it current; forks count once in totals;
`session_usage --json` gives pi's breakdown."""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime

import pytest
from django.core.management import call_command

from sessions_app.core.usage import usage_breakdown
from sessions_app.models import Entry, Session, SessionShare, Team, TeamMembership, UsageDaily
from sessions_app.selectors.sessions import visible_sessions
from sessions_app.selectors.usage import dashboard, session_summary
from sessions_app.services import sessions
from sessions_app.services.fork import fork_session
from sessions_app.services.importer import import_jsonl_stream
from tests.support.pi16_sessions import assert_same_breakdown
from tests.support.pi16_sessions import sessions_dir as pi16_dir
from tests.support.pi16_sessions import usage_cases as pi16_cases
from tests.support.usage_data import costly_entries, import_costly, usage

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]

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


def test_a_fork_counts_once_in_a_team_total_and_whole_in_its_own(make_user):
    alice, bob = make_user("alice2"), make_user("bob2")
    team = Team.objects.create(name="reviewers")
    TeamMembership.objects.create(team=team, user=alice)
    TeamMembership.objects.create(team=team, user=bob)
    source = import_costly(alice)
    fork = fork_session(source, "e0000007", actor=bob)  # copies up to the opus turn
    sessions.append_entry(
        fork,
        {
            "type": "usage",
            "provider": "openai",
            "model": "gpt-5.1-codex",
            "timestamp": "2026-01-12T00:00:00.000Z",
            "usage": usage(1, 1, cost=0.25),
        },
    )
    copied = Entry.objects.filter(session=fork, copied=True)
    assert copied.count() == 7 and not copied.filter(pi_id="e0000009").exists()
    own = session_summary(fork)["totals"]
    assert own["cost"] == pytest.approx(0.25 + 0.01 + 0.05 + 0.02 + 1.5 + 0.25)
    for share_of in (source, fork):
        SessionShare.objects.create(session=share_of, team=team)
    shared = Session.objects.filter(shares__team=team)
    board = dashboard(shared)
    assert board.totals.cost == pytest.approx(1.96 + 0.25)  # the source once, plus the new entry
    assert board.totals.tokens == 12145 + 2
    people = {p["session__owner__username"]: p["totals"].cost for p in board.by_person}
    assert people == {"alice2": pytest.approx(1.96), "bob2": pytest.approx(0.25)}
    # Without its source in the scope, the fork's copied entries do count.
    alone = dashboard(Session.objects.filter(pk=fork.pk))
    assert alone.totals.cost == pytest.approx(own["cost"])
    # And each user's own view counts what they can see, once.
    assert dashboard(visible_sessions(bob)).totals.cost == pytest.approx(1.96 + 0.25)


def test_dashboard_date_range_and_groups(make_user):
    owner = make_user("carol")
    import_costly(owner)
    import_costly(owner, session_id="aaaaaaaa-0000-4000-8000-000000000002", cwd="/work/other")
    board = dashboard(visible_sessions(owner), start=date(2026, 1, 11), end=date(2026, 1, 11))
    assert board.days == ["2026-01-11"]
    assert board.totals.cost == pytest.approx(2 * (1.5 + 0.005 + 0.125))
    assert [p["session__cwd"] for p in board.by_project] == ["/work/costly", "/work/other"]
    assert [m["key"] for m in board.models][0] == "anthropic/claude-opus-4-5"
    assert len(board.top_sessions) == 2


def test_offline_html_export_carries_usage_and_the_context_as_tables(make_user):
    from sessions_app.presentation.exports import export_html

    session = import_costly(make_user("owner5"))
    html = export_html(session)
    assert 'id="export-usage"' in html
    assert '<tr data-key="anthropic/claude-opus-4-5">' in html
    assert html.count('<tr class="turn"') == 3 and html.count('<tr class="compaction"') == 1
    assert "uPlot" not in html  # no chart library in the offline file: tables only
    early = export_html(session, "e0000003")
    assert '<tr data-key="anthropic/claude-opus-4-5">' not in early  # this branch only


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
