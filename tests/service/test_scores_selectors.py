"""selectors/scores.py: the configs someone may score a session with, and the badges."""

import pytest

from sessions_app.models import SessionShare, Team, TeamMembership
from sessions_app.selectors import scores as read
from sessions_app.selectors.scores import badges_by_entry, entry_scores, scoring_configs
from sessions_app.services import scores
from tests.support.branchy_session import build_branchy_session

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


def test_scoring_configs_follow_team_role_and_share(make_user):
    owner, admin, reviewer, viewer = (make_user() for _ in range(4))
    team, other = Team.objects.create(name="t"), Team.objects.create(name="u")
    for user, role in ((admin, "admin"), (reviewer, "reviewer"), (viewer, "viewer")):
        TeamMembership.objects.create(team=team, user=user, role=role)
    TeamMembership.objects.create(team=other, user=admin, role="admin")
    TeamMembership.objects.create(team=other, user=owner, role="admin")
    session = build_branchy_session(owner).session
    SessionShare.objects.create(session=session, team=team, role="viewer")
    mine = scores.create_config(team, actor=admin, name="ok", kind="boolean")
    unshared = scores.create_config(other, actor=admin, name="ok", kind="boolean")
    assert scoring_configs(reviewer, session) == [mine]
    assert scoring_configs(admin, session) == [mine]
    assert scoring_configs(viewer, session) == []
    assert scoring_configs(owner, session) == [unshared]  # the owner's own team


def test_badges_average_each_config_per_entry_and_target(make_user):
    owner, a, b = (make_user() for _ in range(3))
    team = Team.objects.create(name="t")
    TeamMembership.objects.create(team=team, user=a, role="admin")
    TeamMembership.objects.create(team=team, user=b, role="reviewer")
    data = build_branchy_session(owner)
    SessionShare.objects.create(session=data.session, team=team, role="viewer")
    number = scores.create_config(team, actor=a, name="q", kind="number", min_value=1, max_value=5)
    yes_no = scores.create_config(team, actor=a, name="ok", kind="boolean")
    entry = data.ids["a3"]
    scores.set_score(data.session, entry, number.pk, "4", actor=a)
    scores.set_score(data.session, entry, number.pk, "5", actor=b)
    scores.set_score(data.session, entry, yes_no.pk, "yes", actor=b, target="branch")
    badges = badges_by_entry(data.session, key="entry__pi_id")[entry]
    assert [(x.config, x.target, x.text) for x in badges] == [
        ("ok", "branch", "yes"),
        ("q", "entry", "4.5"),
    ]
    assert a.username in badges[1].title and "branch" in badges[0].title
    assert [s.value for s in entry_scores(data.session, entry)] == [1.0, 4.0, 5.0]


def test_sessions_list_and_usage_filter_on_scores(make_user):
    from sessions_app.models import Session
    from sessions_app.selectors.scores import scores_by_model
    from sessions_app.selectors.sessions import ListFilters, visible_list

    owner = make_user()
    team = Team.objects.create(name="t")
    TeamMembership.objects.create(team=team, user=owner, role="admin")
    low, high = build_branchy_session(owner, name="low"), build_branchy_session(owner, name="high")
    config = scores.create_config(
        team, actor=owner, name="q", kind="number", min_value=1, max_value=5
    )
    scores.set_score(low.session, low.ids["a3"], config.pk, "2", actor=owner)
    scores.set_score(high.session, high.ids["a3"], config.pk, "5", actor=owner)
    below = ListFilters.from_params({"score": "Q<3"})
    assert [s.name for s in visible_list(owner, below)] == ["low"]
    assert [s.name for s in visible_list(owner, ListFilters.from_params({"score": "q>=5"}))] == [
        "high"
    ]
    broken = ListFilters.from_params({"score": "q<<3"})
    assert broken.score == "" and broken.problems
    rows = scores_by_model(Session.objects.filter(owner=owner), "q<3")
    assert rows == [
        {"score": "q", "model": rows[0]["model"], "count": 2, "mean": 3.5, "meeting": 1}
    ]
    assert "scripted-model" in rows[0]["model"]


def test_scores_over_time_has_a_line_per_score_and_model(make_user):
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app.models import Score, Session
    from sessions_app.selectors.scores import scores_over_time

    owner = make_user()
    team = Team.objects.create(name="t")
    TeamMembership.objects.create(team=team, user=owner, role="admin")
    data = build_branchy_session(owner)
    config = scores.create_config(
        team, actor=owner, name="q", kind="number", min_value=1, max_value=5
    )
    early = scores.set_score(data.session, data.ids["a3"], config.pk, "2", actor=owner)
    scores.set_score(data.session, data.ids["b3"], config.pk, "4", actor=owner)
    Score.objects.filter(pk=early.pk).update(created_at=timezone.now() - timedelta(days=2))
    chart = scores_over_time(Session.objects.filter(owner=owner))
    assert len(chart["days"]) == 2
    [line] = chart["series"]
    assert line["label"].startswith("q · ") and line["values"] == [2.0, 4.0]
    assert scores_over_time(Session.objects.none()) == {"days": [], "series": []}


def test_a_blank_score_filter_filters_nothing_in_every_reader(make_user):
    """`parse_score_filter` reads a blank filter as none: every reader takes that as no
    filter rather than unpacking None (a TypeError, a 500 on a page)."""
    from sessions_app.models import Session
    from sessions_app.selectors.scores import scores_by_model
    from sessions_app.selectors.search import SearchFilters, search
    from sessions_app.selectors.sessions import scored_so

    owner = make_user()
    build_branchy_session(owner)
    sessions = Session.objects.filter(owner=owner)
    assert scores_by_model(sessions, "   ") == scores_by_model(sessions, "")
    assert list(scored_so("  ")) == list(scored_so("")) == []
    blank = search(owner, "approach", SearchFilters(score="  "))
    every = search(owner, "approach", SearchFilters())
    assert len(blank.hits) == len(every.hits)


def test_the_reads_a_config_change_checks(make_user):
    owner, admin = make_user(), make_user()
    team, other = Team.objects.create(name="t"), Team.objects.create(name="u")
    TeamMembership.objects.create(team=team, user=admin, role="admin")
    data = build_branchy_session(owner)
    number = scores.create_config(
        team, actor=admin, name="Q", kind="number", min_value=1, max_value=5
    )
    assert read.config_name_taken(team, "q") and not read.config_name_taken(other, "q")
    assert not read.config_name_taken(team, "q", besides=number.pk)
    assert read.is_team_config(team, number.pk) and not read.is_team_config(other, number.pk)
    assert read.config_with_team(number.pk).team == team
    assert not read.shared_with_team(data.session, team)
    SessionShare.objects.create(session=data.session, team=team, role="viewer")
    assert read.shared_with_team(data.session, team)
    entry = data.ids["a3"]
    scores.set_score(data.session, entry, number.pk, "2", actor=admin)
    scores.set_score(data.session, data.ids["a2"], number.pk, "5", actor=admin)
    assert sorted(s.value for s in read.config_scores(number)) == [2.0, 5.0]
    assert read.scores_outside(number, 1, 4, []) == 1
    assert read.scores_outside(number, 2, 5, []) == 0
    given = read.config_scores(number)[0]
    assert read.own_score(data.session, given.pk, admin) == given
    assert read.own_score(data.session, given.pk, owner) is None
