"""selectors/usage.py: the usage dashboard (totals, days, groups by person, project and
model; a fork counted once beside its source) and one session's summary."""

from __future__ import annotations

from datetime import date

import pytest

from sessions_app.models import Entry, Session, SessionShare, Team, TeamMembership
from sessions_app.selectors.sessions import visible_sessions
from sessions_app.selectors.usage import dashboard, session_summary
from sessions_app.services import sessions
from sessions_app.services.fork import fork_session
from tests.support.usage_data import import_costly, usage

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


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


def _spend(session, cost: float, day: int) -> None:
    sessions.append_entry(
        session,
        {
            "type": "usage",
            "provider": "openai",
            "model": "gpt-5.1-codex",
            "timestamp": f"2026-01-{day:02d}T00:00:00.000Z",
            "usage": usage(1, 1, cost=cost),
        },
    )


@pytest.mark.parametrize("deleted_first", ["source", "middle"])
def test_forks_of_forks_count_once_and_stay_counted_when_their_sources_are_deleted(
    make_user, deleted_first
):
    from sessions_app.services.manage import delete_session

    alice = make_user("alice3")
    source = import_costly(alice)  # 1.96 in all, 1.83 up to e0000007
    first = fork_session(source, "e0000007", actor=alice)
    _spend(first, 0.25, 12)
    first.refresh_from_db()
    second = fork_session(first, first.leaf.pi_id, actor=alice)  # a fork of a fork
    _spend(second, 0.5, 13)

    def total() -> float:
        return dashboard(visible_sessions(alice)).totals.cost

    def own(session) -> float:
        return session_summary(session)["totals"]["cost"]

    assert total() == pytest.approx(1.96 + 0.25 + 0.5)
    assert own(second) == pytest.approx(1.83 + 0.25 + 0.5)
    before = {s.pk: own(s) for s in (first, second)}
    doomed = source if deleted_first == "source" else first
    delete_session(doomed, actor=alice, confirm=doomed.pi_id)
    # Deleting a fork's source (or a fork in the middle) leaves every other session whole,
    # and what they hold counted once.
    left = [s for s in (first, second) if s.pk != doomed.pk]
    assert {s.pk: own(s) for s in left} == {s.pk: before[s.pk] for s in left}
    assert total() == pytest.approx((1.96 if doomed is first else 1.83) + 0.25 + 0.5)
    # Then the other one: the last fork holds the whole history, counted once.
    other = first if doomed is source else source
    delete_session(other, actor=alice, confirm=other.pi_id)
    assert own(second) == pytest.approx(1.83 + 0.25 + 0.5)
    assert total() == pytest.approx(1.83 + 0.25 + 0.5)
