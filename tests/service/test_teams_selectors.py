"""selectors/teams.py: a user's teams with their members and shares, in a fixed number of
queries."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.models import SessionShare, Team, TeamMembership
from sessions_app.selectors import teams
from sessions_app.selectors.teams import teams_with_shares
from sessions_app.services import sessions as sessions_service

pytestmark = pytest.mark.django_db


def _team_with_shares(user, name, sessions):
    team = Team.objects.create(name=name)
    team.members.add(user)
    for session in sessions:
        SessionShare.objects.create(session=session, team=team, role="viewer")


def test_teams_with_their_shares_cost_the_same_queries_for_any_number_of_teams(make_user):
    me, owner = make_user("me"), make_user("sharer")
    sessions = [
        sessions_service.create_session(owner=owner, cwd="/tmp", name=f"s{i}") for i in range(4)
    ]
    _team_with_shares(me, "alpha", sessions[:2])

    def counted():
        with CaptureQueriesContext(connection) as queries:
            rows = teams_with_shares(me)
            shown = [(r["team"].name, [str(s.session) for s in r["shares"]]) for r in rows]
            shown += [[m.get_username() for m in r["members"]] for r in rows]
            shown += [[s.session.owner.get_username() for s in r["shares"]] for r in rows]
        return shown, len(queries)

    shown_one, one = counted()
    assert shown_one[0][0] == "alpha" and sorted(shown_one[0][1]) == ["s0", "s1"]
    _team_with_shares(me, "beta", sessions[1:])
    _team_with_shares(me, "gamma", sessions)
    shown_three, three = counted()
    assert [row[0] for row in shown_three[:3]] == ["alpha", "beta", "gamma"]
    assert len(shown_three[2][1]) == 4
    assert three == one  # no query per team


def test_the_membership_reads_a_team_change_checks(make_user):
    admin, member, outsider = make_user("admin"), make_user("member"), make_user("outsider")
    team = Team.objects.create(name="Alpha")
    mine = TeamMembership.objects.create(team=team, user=admin, role=TeamMembership.Role.ADMIN)
    theirs = TeamMembership.objects.create(team=team, user=member, role="viewer")
    assert teams.membership(team, admin) == mine and teams.membership(team, outsider) is None
    assert teams.team_member(team, theirs.pk) == theirs
    assert teams.team_member(Team.objects.create(name="Beta"), theirs.pk) is None
    assert teams.team_name_taken("alpha") and not teams.team_name_taken("gamma")
    assert teams.admins_besides(team, admin.pk) == 0
    assert teams.admins_besides(team, member.pk) == 1
    assert teams.has_other_members(team, mine)
    theirs.delete()
    assert not teams.has_other_members(team, mine)
    assert not teams.team_has_shares(team.pk) and teams.shared_session_pks(team.pk) == []
    session = sessions_service.create_session(owner=admin, cwd="/tmp")
    SessionShare.objects.create(session=session, team=team, role="viewer")
    assert teams.team_has_shares(team.pk) and teams.shared_session_pks(team.pk) == [session.pk]
