"""Sharing a session: with a team (viewer / editor), or by a read-only link to one branch.

Only the owner shares (views check OWNER through access.check_access). Links are
random 256-bit tokens, revocable, with an optional expiry; a link always shows the
session as it is now (nothing is copied).
"""

import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from sessions_app.models import Entry, Session, SessionShare, ShareLink, Team
from sessions_app.services.tree import lock_session, record_activity

MAX_LINK_DAYS = 365


class SharingError(ValueError):
    """Bad sharing input, with a message fit for the user."""


def teams_for_sharing(user):
    """Teams the owner can share with: the ones they belong to (superusers: all)."""
    if user.is_superuser:
        return Team.objects.order_by("name")
    return Team.objects.filter(members=user).order_by("name")


@transaction.atomic
def share_with_team(session: Session, team_pk: int, role: str, *, actor) -> SessionShare:
    if role not in SessionShare.Role.values:
        raise SharingError(f"Unknown role {role!r}: choose viewer or editor.")
    team = teams_for_sharing(actor).filter(pk=team_pk).first()
    if team is None:
        raise SharingError("You can only share with a team you belong to.")
    locked = lock_session(session.pk)
    share, _ = SessionShare.objects.update_or_create(
        session=locked, team=team, defaults={"role": role}
    )
    record_activity(locked, actor, "shared", team=team.name, role=role)
    return share


@transaction.atomic
def unshare_team(session: Session, share_pk: int, *, actor) -> None:
    locked = lock_session(session.pk)
    share = SessionShare.objects.filter(pk=share_pk, session=locked).select_related("team").first()
    if share is None:
        raise SharingError("This session is not shared with that team.")
    team_name = share.team.name
    share.delete()
    record_activity(locked, actor, "unshared", team=team_name)


def _entry_exists(session: Session, pi_id: str | None) -> bool:
    return pi_id is None or Entry.objects.filter(session=session, pi_id=pi_id).exists()


@transaction.atomic
def create_link(
    session: Session,
    *,
    actor,
    leaf_pi_id: str | None,
    target_pi_id: str | None = None,
    expires_in_days: int | None = None,
) -> ShareLink:
    """A read-only link to the branch ending at `leaf_pi_id`, focused on `target_pi_id`."""
    locked = lock_session(session.pk)
    leaf_pi_id = leaf_pi_id or (locked.leaf.pi_id if locked.leaf else None)
    target_pi_id = target_pi_id or leaf_pi_id
    for pi_id in (leaf_pi_id, target_pi_id):
        if not _entry_exists(locked, pi_id):
            raise SharingError(f"No entry {pi_id!r} in this session.")
    expires_at = None
    if expires_in_days:
        if not 1 <= int(expires_in_days) <= MAX_LINK_DAYS:
            raise SharingError(f"Expiry must be between 1 and {MAX_LINK_DAYS} days.")
        expires_at = timezone.now() + timedelta(days=int(expires_in_days))
    link = ShareLink.objects.create(
        token=secrets.token_urlsafe(32),
        session=locked,
        leaf_pi_id=leaf_pi_id,
        target_pi_id=target_pi_id,
        created_by=actor,
        expires_at=expires_at,
    )
    record_activity(
        locked, actor, "created share link", link=link.pk, leaf=leaf_pi_id, target=target_pi_id
    )
    return link


@transaction.atomic
def revoke_link(session: Session, link_pk: int, *, actor) -> ShareLink:
    locked = lock_session(session.pk)
    link = ShareLink.objects.filter(pk=link_pk, session=locked).first()
    if link is None:
        raise SharingError("No such link on this session.")
    if link.revoked_at is None:
        link.revoked_at = timezone.now()
        link.save(update_fields=["revoked_at"])
        record_activity(locked, actor, "revoked share link", link=link.pk)
    return link


def link_state(link: ShareLink) -> str:
    if link.revoked_at:
        return "revoked"
    if link.expires_at and link.expires_at <= timezone.now():
        return "expired"
    return "active"
