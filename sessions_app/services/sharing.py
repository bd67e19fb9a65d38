"""Sharing a session: with a team (viewer / editor), or by a read-only link to one branch.

Only the owner shares (views check OWNER through access.check_access). Links are
random 256-bit tokens, revocable, with an optional expiry; a link always shows the
session as it is now (nothing is copied).

What a link shows (`selectors.sharing.link_visible_entry_ids`) depends on its scope, chosen
when it is made:
- "path" (the default): exactly the path root → the link's node, nothing below it;
- "subtree": that path plus every entry below the node, including what is appended
  there later (the branch growing).
Nothing else shows: not on the link page, not in its exports, not on its websocket.

Every change that can take access away (link revoked or deleted, team share removed or
its role changed, team member removed) publishes `access_changed` on the session group:
open websockets re-run check_access and close (4403) when their access is gone.
"""

import secrets
from datetime import timedelta

from django.db import transaction
from django.db.models.signals import post_save, pre_delete
from django.dispatch import receiver
from django.utils import timezone

from sessions_app.core.errors import ServiceError
from sessions_app.core.share_scope import visible_ids
from sessions_app.models import Session, SessionShare, ShareLink, TeamMembership
from sessions_app.selectors.entries import entry_exists
from sessions_app.selectors.sessions import session_audience
from sessions_app.selectors.sharing import link_by_pk, parent_pairs, team_for_sharing, team_share
from sessions_app.selectors.teams import shared_session_pks, team_has_shares
from sessions_app.services import events
from sessions_app.services.sessions import lock_session, record_activity

MAX_LINK_DAYS = 365


class SharingError(ServiceError):
    """Bad sharing input, with a message fit for the user."""

    code = "sharing"


EXPIRY_MESSAGE = (
    f"Expiry must be a whole number of days from 1 to {MAX_LINK_DAYS}, "
    "or empty for a link that does not expire."
)


def parse_expiry_days(raw) -> int | None:
    """The expiry field of the link form: empty means no expiry; anything else must be a
    whole number of days in range (`0`, `abc`, `1.5` are refused, never "no expiry")."""
    text = "" if raw is None else str(raw).strip()
    if not text:
        return None
    if not text.isascii() or not text.isdigit():
        raise SharingError(EXPIRY_MESSAGE)
    days = int(text)
    if not 1 <= days <= MAX_LINK_DAYS:
        raise SharingError(EXPIRY_MESSAGE)
    return days


@transaction.atomic
def share_with_team(session: Session, team_pk: int, role: str, *, actor) -> SessionShare:
    if role not in SessionShare.Role.values:
        raise SharingError(f"Unknown role {role!r}: choose viewer or editor.")
    team = team_for_sharing(actor, team_pk)
    if team is None:
        raise SharingError("You can only share with a team you belong to.")
    locked = lock_session(session.pk)
    share, created = SessionShare.objects.update_or_create(
        session=locked, team=team, defaults={"role": role}
    )
    record_activity(locked, actor, "shared", team=team.name, role=role)
    events.publish_sessions_changed([locked.pk])  # (the team's members now see it)
    if not created:  # editor → viewer: open sockets must drop their edit rights
        publish_access_changed(locked.pk, "team share changed")
    return share


@transaction.atomic
def unshare_team(session: Session, share_pk: int, *, actor) -> None:
    """Remove a team share (the pre_delete receiver below publishes `access_changed`)."""
    locked = lock_session(session.pk)
    share = team_share(locked, share_pk)
    if share is None:
        raise SharingError("This session is not shared with that team.", 404)
    team_name = share.team.name
    share.delete()
    record_activity(locked, actor, "unshared", team=team_name)


def _entry_exists(session: Session, pi_id: str | None) -> bool:
    return pi_id is None or entry_exists(session, pi_id)


@transaction.atomic
def create_link(
    session: Session,
    *,
    actor,
    leaf_pi_id: str | None,
    target_pi_id: str | None = None,
    expires_in_days: int | str | None = None,
    scope: str = ShareLink.Scope.PATH,
    show_scores: bool = False,
) -> ShareLink:
    """A read-only link to the branch ending at `leaf_pi_id`, focused on `target_pi_id`;
    `scope` "subtree" also shows everything below the leaf; `show_scores` shows the
    team's scores of the entries it shows (never shown otherwise)."""
    if scope not in ShareLink.Scope.values:
        raise SharingError(
            "Choose what the link shows: the path to the node, or the node and everything under it."
        )
    expires_in_days = parse_expiry_days(expires_in_days)
    locked = lock_session(session.pk)
    leaf_pi_id = leaf_pi_id or locked.leaf_pi_id
    target_pi_id = target_pi_id or leaf_pi_id
    for pi_id in (leaf_pi_id, target_pi_id):
        if not _entry_exists(locked, pi_id):
            raise SharingError(f"No entry {pi_id!r} in this session.")
    if target_pi_id != leaf_pi_id and target_pi_id not in visible_ids(
        parent_pairs(locked.pk), leaf_pi_id
    ):
        raise SharingError("The focused entry must be on the shared branch.")
    expires_at = None
    if expires_in_days is not None:
        expires_at = timezone.now() + timedelta(days=expires_in_days)
    link = ShareLink.objects.create(
        token=secrets.token_urlsafe(32),
        scope=scope,
        session=locked,
        leaf_pi_id=leaf_pi_id,
        target_pi_id=target_pi_id,
        created_by=actor,
        expires_at=expires_at,
        show_scores=show_scores,
    )
    record_activity(
        locked,
        actor,
        "created share link",
        link=link.pk,
        leaf=leaf_pi_id,
        target=target_pi_id,
        scope=scope,
    )
    return link


@transaction.atomic
def revoke_link(session: Session, link_pk: int, *, actor) -> ShareLink:
    locked = lock_session(session.pk)
    link = link_by_pk(locked, link_pk)
    if link is None:
        raise SharingError("No such link on this session.", 404)
    if link.revoked_at is None:
        link.revoked_at = timezone.now()
        link.save(update_fields=["revoked_at"])
        record_activity(locked, actor, "revoked share link", link=link.pk)
        publish_access_changed(locked.pk, "share link revoked")
    return link


# --- telling open websockets that access changed ---------------------------------------


def publish_access_changed(session_pk: int, reason: str) -> None:
    """After commit, ask the session's open websockets to re-check their access. The event
    carries no content: each socket re-runs check_access and closes (4403) if it lost it."""
    events.publish(session_pk, "access_changed", {"reason": reason})


# Deletes can come from the services above, the admin, or cascades (a team, a user or a
# session deleted): pre_delete sees the rows before they go (post_delete would find a
# team's shares already gone) and the event still waits for the commit.
@receiver(pre_delete, sender=SessionShare, dispatch_uid="piweb_share_deleted")
def _share_deleted(sender, instance, **kwargs):
    publish_access_changed(instance.session_id, "team share removed")
    events.publish_sessions_changed_to(session_audience([instance.session_id]))  # (still there)


@receiver(pre_delete, sender=ShareLink, dispatch_uid="piweb_link_deleted")
def _link_deleted(sender, instance, **kwargs):
    publish_access_changed(instance.session_id, "share link deleted")


@receiver(pre_delete, sender=TeamMembership, dispatch_uid="piweb_member_removed")
def _member_removed(sender, instance, **kwargs):
    shared = shared_session_pks(instance.team_id)
    for session_pk in shared:
        publish_access_changed(session_pk, "team member removed")
    if shared:
        events.publish_sessions_changed_to([instance.user_id])


@receiver(post_save, sender=TeamMembership, dispatch_uid="piweb_member_added")
def _member_added(sender, instance, created, raw=False, **kwargs):
    if created and not raw and team_has_shares(instance.team_id):
        events.publish_sessions_changed_to([instance.user_id])  # (the team's sessions are theirs)


@receiver(pre_delete, sender=Session, dispatch_uid="piweb_session_deleted")
def _session_deleted(sender, instance, **kwargs):
    # (who saw it is known only before it goes)
    events.publish_sessions_changed_to(session_audience([instance.pk]))
