"""Reads of sharing: team shares and links of a session, the teams a user may share with,
a link's state, and what a link shows (its entries, and whether a new entry is among
them: see services/sharing.py for the scopes)."""

from __future__ import annotations

from django.db import connection
from django.utils import timezone

from sessions_app.core.share_scope import visible_ids
from sessions_app.models import Entry, Session, SessionShare, ShareLink, Team


def session_shares(session: Session):
    return SessionShare.objects.filter(session=session).select_related("team")


def session_links(session: Session) -> list[ShareLink]:
    return list(ShareLink.objects.filter(session=session).order_by("-created_at"))


def session_link(session: Session, token: str) -> ShareLink | None:
    return ShareLink.objects.filter(token=token, session=session).first()


def team_share(session: Session, share_pk: int) -> SessionShare | None:
    """The share `share_pk` of `session`, with its team, or None."""
    return SessionShare.objects.filter(pk=share_pk, session=session).select_related("team").first()


def link_by_pk(session: Session, link_pk: int) -> ShareLink | None:
    """The link `link_pk` of `session`, or None."""
    return ShareLink.objects.filter(pk=link_pk, session=session).first()


def teams_for_sharing(user):
    """Teams the owner can share with: the ones they belong to (superusers: all)."""
    if user.is_superuser:
        return Team.objects.order_by("name")
    return Team.objects.filter(members=user).order_by("name")


def team_for_sharing(user, team_pk: int) -> Team | None:
    """The team `team_pk` if `user` may share with it, else None."""
    return teams_for_sharing(user).filter(pk=team_pk).first()


def link_state(link: ShareLink) -> str:
    if link.revoked_at:
        return "revoked"
    if link.expires_at and link.expires_at <= timezone.now():
        return "expired"
    return "active"


def parent_pairs(session_pk: int):
    return (
        Entry.objects.filter(session_id=session_pk)
        .values_list("pi_id", "parent_pi_id")
        .iterator(chunk_size=5000)
    )


def link_visible_entry_ids(link: ShareLink) -> set[str]:
    """Every entry id the link's page, exports and websocket may show (one light query)."""
    return visible_ids(
        parent_pairs(link.session_id),
        link.leaf_pi_id,
        subtree=link.scope == ShareLink.Scope.SUBTREE,
    )


def link_covers_new_entry(link: ShareLink, pi_id: str) -> bool:
    """Whether `pi_id` is the link's leaf or below it: the part of a link's branch that grows.

    For the websocket's check of an appended entry. One query that walks up the parent
    links only while entries are newer than the link's leaf (a child is always appended
    after its parent), so an entry on another branch costs a short walk too. A "path"
    link never covers a new entry: nothing below its node shows.
    """
    if link.scope != ShareLink.Scope.SUBTREE:
        return False
    if link.leaf_pi_id is None:
        return Entry.objects.filter(session_id=link.session_id, pi_id=pi_id).exists()
    leaf = (
        Entry.objects.filter(session_id=link.session_id, pi_id=link.leaf_pi_id)
        .values_list("pk", "seq")
        .first()
    )
    if leaf is None:
        return False
    table = Entry._meta.db_table
    sql = f"""
        WITH RECURSIVE up(id, parent_id, seq) AS (
            SELECT id, parent_id, seq FROM {table} WHERE session_id = %s AND pi_id = %s
            UNION
            SELECT e.id, e.parent_id, e.seq FROM {table} e JOIN up ON e.id = up.parent_id
            WHERE up.seq > %s
        )
        SELECT 1 FROM up WHERE id = %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [link.session_id, pi_id, leaf[1], leaf[0]])
        return cursor.fetchone() is not None
