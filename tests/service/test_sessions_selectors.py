"""selectors/sessions.py: the sessions list's filters read from request parameters (a bad
value falls back and says so), what a user sees in which order, and who may see a session."""

from datetime import UTC, date, datetime

import pytest

from sessions_app.models import Session
from sessions_app.selectors.sessions import (
    DEFAULT_SORT,
    ListFilters,
    day_bounds,
    session_audience,
    visible_list,
)
from sessions_app.services import sessions
from tests.support.web import share

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


def test_filters_from_parameters_fall_back_on_bad_values_and_say_why():
    found = ListFilters.from_params(
        {
            "q": "  fix\x00 bug  ",
            "source": "nowhere",
            "archived": "sometimes",
            "pinned": "on",
            "tag": "#UI",
            "from": "2026-02-30",
            "to": "2026-03-01",
            "sort": "-colour",
        }
    )
    assert "\x00" not in found.query and found.query.startswith("fix")
    assert (found.source, found.archived, found.sort) == ("", "", DEFAULT_SORT)
    assert found.pinned and found.tag == "ui"
    assert found.start is None and found.end == date(2026, 3, 1)
    assert found.problems == ["“2026-02-30” is not a date (YYYY-MM-DD); from ignored."]
    assert found.as_params() == {"q": found.query, "to": "2026-03-01", "pinned": "1", "tag": "ui"}
    assert ListFilters.from_params({"sort": "name"}).as_params(sort="-cost") == {"sort": "-cost"}


def test_day_bounds_cover_whole_days_in_utc():
    low, high = day_bounds(date(2026, 1, 31), date(2026, 2, 1))
    assert low == datetime(2026, 1, 31, tzinfo=UTC)
    assert high == datetime(2026, 2, 2, tzinfo=UTC)
    assert day_bounds(None, None) == (None, None)


def test_a_user_sees_their_own_and_shared_sessions_pinned_first_archived_apart(make_user):
    me, other, stranger = make_user(), make_user(), make_user()
    sessions.create_session(owner=me, cwd="/w/a", name="alpha")
    beta = sessions.create_session(owner=me, cwd="/w/b", name="beta")
    shared = sessions.create_session(owner=other, cwd="/w/c", name="gamma")
    sessions.create_session(owner=other, cwd="/w/d", name="delta")  # not shared with me
    share(shared, me, "viewer")
    old = sessions.create_session(owner=me, cwd="/w/e", name="epsilon")
    Session.objects.filter(pk=old.pk).update(archived=True)
    Session.objects.filter(pk=beta.pk).update(pinned=True)

    def names(**params):
        return [s.name for s in visible_list(me, ListFilters.from_params(params))]

    assert names(sort="name") == ["beta", "alpha", "gamma"]  # pinned first, then A to Z
    assert names(sort="-name") == ["beta", "gamma", "alpha"]
    assert names(archived="only") == ["epsilon"]
    assert sorted(names(archived="all")) == ["alpha", "beta", "epsilon", "gamma"]
    assert names(pinned="1") == ["beta"]
    assert names(q="gam") == ["gamma"] and names(project="/w/a") == ["alpha"]
    assert [s.name for s in visible_list(stranger, ListFilters())] == []


def test_the_time_filter_keeps_sessions_whose_span_meets_the_range(make_user):
    me = make_user()
    early = sessions.create_session(owner=me, cwd="/w", name="early")
    late = sessions.create_session(owner=me, cwd="/w", name="late")
    Session.objects.filter(pk=early.pk).update(
        started_at=datetime(2026, 1, 1, 9, tzinfo=UTC),
        last_activity_at=datetime(2026, 1, 3, 9, tzinfo=UTC),
    )
    Session.objects.filter(pk=late.pk).update(
        started_at=datetime(2026, 2, 1, 9, tzinfo=UTC),
        last_activity_at=datetime(2026, 2, 1, 10, tzinfo=UTC),
    )

    def names(**params):
        return sorted(s.name for s in visible_list(me, ListFilters.from_params(params)))

    assert names(**{"from": "2026-01-02", "to": "2026-01-02"}) == ["early"]
    assert names(**{"from": "2026-01-04"}) == ["late"]
    assert names(to="2026-01-01") == ["early"]


def test_the_audience_of_sessions_is_their_owners_and_their_teams(make_user):
    owner, viewer, stranger = make_user(), make_user(), make_user()
    session = sessions.create_session(owner=owner, cwd="/w")
    assert session_audience([session.pk]) == {owner.pk}
    share(session, viewer, "viewer")
    assert session_audience([session.pk]) == {owner.pk, viewer.pk}
    assert stranger.pk not in session_audience([session.pk])
    assert session_audience([]) == set()
