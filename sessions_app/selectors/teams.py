"""Reads about teams: the teams page and the usage dashboard's team scope."""

from __future__ import annotations

from django.db.models import Prefetch

from sessions_app.models import Session, SessionShare, Team, TeamMembership

TEAM_SHARES_LIMIT = 50


def member_team(user, team_id: str) -> Team | None:
    """The team with this id if `user` is a member of it (else None)."""
    return Team.objects.filter(pk=team_id if team_id.isdigit() else 0, members=user).first()


def team_sessions(team: Team):
    """The sessions shared with a team (a queryset)."""
    return Session.objects.filter(pk__in=team.shares.values("session_id"))


def teams_with_shares(user) -> list[dict]:
    """The teams `user` is in, with their members and the sessions shared with them
    (newest first, at most TEAM_SHARES_LIMIT each) and their score configs: four queries, whatever the count."""
    shares = SessionShare.objects.select_related("session", "session__owner").order_by(
        "-session__modified_at"
    )
    teams = (
        Team.objects.filter(members=user)
        .order_by("name")
        .prefetch_related(
            "members",
            "score_configs",
            Prefetch("shares", queryset=shares),
            Prefetch(
                "teammembership_set",
                queryset=TeamMembership.objects.select_related("user").order_by("user__username"),
            ),
        )
    )
    rows = []
    for team in teams:
        memberships = list(team.teammembership_set.all())
        mine = next((m for m in memberships if m.user_id == user.pk), None)
        rows.append(
            {
                "team": team,
                "members": list(team.members.all()),
                "memberships": memberships,
                "my_role": mine.role if mine else "",
                "shares": list(team.shares.all())[:TEAM_SHARES_LIMIT],
                "score_configs": list(team.score_configs.all()),
            }
        )
    return rows


def team_of_member(team_id: int, user) -> Team | None:
    """The team `team_id` when `user` is in it (others are not shown to them at all)."""
    return Team.objects.filter(pk=team_id, members=user).first()


def membership(team: Team, user) -> TeamMembership | None:
    """`user`'s membership of `team`, or None."""
    return TeamMembership.objects.filter(team=team, user=user).first()


def team_member(team: Team, member_pk: int) -> TeamMembership | None:
    """The membership `member_pk` of `team`, or None."""
    return TeamMembership.objects.filter(team=team, pk=member_pk).first()


def team_name_taken(name: str) -> bool:
    """Whether a team already has this name, in any case."""
    return Team.objects.filter(name__iexact=name).exists()


def admins_besides(team: Team, user_pk: int) -> int:
    """How many admins `team` has apart from the user `user_pk`."""
    return (
        TeamMembership.objects.filter(team=team, role=TeamMembership.Role.ADMIN)
        .exclude(user_id=user_pk)
        .count()
    )


def has_other_members(team: Team, member: TeamMembership) -> bool:
    """Whether anyone but `member` is in `team`."""
    return TeamMembership.objects.filter(team=team).exclude(pk=member.pk).exists()


def shared_session_pks(team_id: int) -> list[int]:
    """The pks of the sessions shared with the team `team_id`."""
    return list(SessionShare.objects.filter(team_id=team_id).values_list("session_id", flat=True))


def team_has_shares(team_id: int) -> bool:
    """Whether any session is shared with the team `team_id`."""
    return SessionShare.objects.filter(team_id=team_id).exists()
