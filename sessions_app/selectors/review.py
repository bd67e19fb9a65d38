"""Reads of the review area: activity, shares, links and teams."""

from __future__ import annotations

from django.db.models import Prefetch

from sessions_app.models import Activity, Session, SessionShare, ShareLink, Team

ACTIVITY_LIMIT = 100
TEAM_SHARES_LIMIT = 50


def session_activity(session: Session, limit: int = ACTIVITY_LIMIT):
    return Activity.objects.filter(session=session).select_related("actor")[:limit]


def session_shares(session: Session):
    return SessionShare.objects.filter(session=session).select_related("team")


def session_links(session: Session) -> list[ShareLink]:
    return list(ShareLink.objects.filter(session=session).order_by("-created_at"))


def session_link(session: Session, token: str) -> ShareLink | None:
    return ShareLink.objects.filter(token=token, session=session).first()


def teams_with_shares(user) -> list[dict]:
    """The teams `user` is in, with their members and the sessions shared with them
    (newest first, at most TEAM_SHARES_LIMIT each): three queries, whatever the count."""
    shares = SessionShare.objects.select_related("session", "session__owner").order_by(
        "-session__modified_at"
    )
    teams = (
        Team.objects.filter(members=user)
        .order_by("name")
        .prefetch_related("members", Prefetch("shares", queryset=shares))
    )
    return [
        {
            "team": team,
            "members": list(team.members.all()),
            "shares": list(team.shares.all())[:TEAM_SHARES_LIMIT],
        }
        for team in teams
    ]
