"""Who is an admin, the users an admin manages, and the invitation a link names (changing
them: `services/users.py`).

An admin is a staff user (or a superuser); in single-user mode
(``PIWEB_WORKSPACE_MODE=single-user``) every signed-in user is one, since the one user
runs the server. Admins add model endpoints on the Models page and manage users on the
Users page; Django's admin is not needed for either.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from sessions_app.core.errors import Forbidden, NotFound
from sessions_app.models import Invitation


def is_admin(user) -> bool:
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.is_staff or user.is_superuser:
        return True
    return settings.PIWEB_WORKSPACE_MODE == "single-user"


def require_admin(user) -> None:
    """Raises Forbidden (403) unless the user is an admin."""
    if not is_admin(user):
        raise Forbidden("Only an admin can do this.")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def users_for_admin(actor) -> list[dict]:
    """Every user with what the Users page shows (admin only): the open invitation's
    expiry, never its token."""
    require_admin(actor)
    now = timezone.now()
    open_until = dict(
        Invitation.objects.filter(used_at__isnull=True, expires_at__gt=now)
        .order_by("expires_at")
        .values_list("user_id", "expires_at")
    )
    return [
        {"user": user, "invited_until": open_until.get(user.pk), "is_self": user.pk == actor.pk}
        for user in get_user_model().objects.order_by("username")
    ]


def user_for_admin(actor, user_id: int):
    require_admin(actor)
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        raise NotFound("No such user.")
    return user


def username_taken(username: str) -> bool:
    """Whether a user already has this username, in any case."""
    return get_user_model().objects.filter(username__iexact=username).exists()


def user_named(username: str):
    """The user with exactly this username, or None."""
    return get_user_model().objects.filter(username=username).first()


def open_invitation(token: str) -> Invitation | None:
    """The invitation a link's token names, while it can still be used: not used yet, not
    expired, for an active user (None otherwise, whatever the reason)."""
    if not token or len(token) > 200:
        return None
    invitation = (
        Invitation.objects.select_related("user")
        .filter(token_hash=token_hash(token), used_at__isnull=True, expires_at__gt=timezone.now())
        .first()
    )
    if invitation is None or not invitation.user.is_active:
        return None
    return invitation


def user_by_pk(pk: int | str | None):
    """The user with this primary key, or None (also for a missing key)."""
    if pk is None:
        return None
    return get_user_model().objects.filter(pk=pk).first()
