"""Users in the app (the Users page and the password page): an admin creates a user,
deactivates or reactivates one, and makes an invitation link that sets a password (only a
SHA-256 of its token is stored; it works once, for INVITATION_DAYS), and makes another
user an admin or takes it back. Every user changes
their own password. Passwords go through Django's validators (AUTH_PASSWORD_VALIDATORS).
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from sessions_app.core.errors import ServiceError
from sessions_app.models import Invitation
from sessions_app.selectors.users import open_invitation, require_admin, token_hash, username_taken

log = logging.getLogger(__name__)

INVITATION_DAYS = 7
_USERNAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@.+-_")


class UserError(ServiceError):
    """A change to a user that cannot be made (message safe to show)."""

    code = "user"


def _check_password(password: str, again: str, user) -> None:
    if not password:
        raise UserError("Type the new password.")
    if password != again:
        raise UserError("The two passwords differ.")
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise UserError(" ".join(exc.messages)) from None


def create_user(actor, username: str, *, email: str = "", admin: bool = False):
    """A new active user with no usable password yet (an invitation sets one)."""
    require_admin(actor)
    username = (username or "").strip()
    if not username or len(username) > 150 or not set(username) <= _USERNAME_CHARS:
        raise UserError("Choose a username: letters, digits and @ . + - _ (at most 150).")
    if username_taken(username):
        raise UserError(f"There is already a user {username}.")
    email = (email or "").strip()[:254]
    user = get_user_model()(username=username, email=email, is_staff=bool(admin))
    user.set_unusable_password()
    user.save()
    log.info("user %s created user %s (admin: %s)", actor.pk, user.pk, bool(admin))
    return user


def set_active(actor, user, active: bool) -> None:
    """Deactivate (they can no longer log in, and their open pages lose their login) or
    reactivate a user; never oneself."""
    require_admin(actor)
    if user.pk == actor.pk:
        raise UserError("You cannot deactivate yourself.")
    user.is_active = bool(active)
    user.save(update_fields=["is_active"])
    if not active:
        Invitation.objects.filter(user=user, used_at__isnull=True).update(used_at=timezone.now())
    log.info("user %s set user %s active=%s", actor.pk, user.pk, bool(active))


def set_admin(actor, user, admin: bool) -> None:
    """Make a user an admin (staff) or take it back; never one's own (another admin does)."""
    require_admin(actor)
    if user.pk == actor.pk:
        raise UserError("You cannot change your own admin right: another admin does.")
    if not admin and user.is_superuser:
        raise UserError(f"{user.get_username()} is a superuser: that stays an admin.")
    user.is_staff = bool(admin)
    user.save(update_fields=["is_staff"])
    log.info("user %s set user %s admin=%s", actor.pk, user.pk, bool(admin))


def invite(actor, user) -> tuple[str, Invitation]:
    """A new invitation link's token for a user (shown once); it replaces their open ones."""
    require_admin(actor)
    if not user.is_active:
        raise UserError(f"{user.get_username()} is deactivated: reactivate them first.")
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    with transaction.atomic():
        Invitation.objects.filter(user=user, used_at__isnull=True).update(used_at=now)
        invitation = Invitation.objects.create(
            user=user,
            token_hash=token_hash(token),
            created_by=actor,
            expires_at=now + timedelta(days=INVITATION_DAYS),
        )
    log.info("user %s made an invitation for user %s", actor.pk, user.pk)
    return token, invitation


def accept_invitation(token: str, password: str, again: str):
    """Set the password an invitation link is for; the link is then used up. Returns the
    user (the view logs them in)."""
    invitation = open_invitation(token)
    if invitation is None:
        raise UserError("This invitation link has expired or was already used.", status=410)
    user = invitation.user
    _check_password(password, again, user)
    with transaction.atomic():
        used = Invitation.objects.filter(pk=invitation.pk, used_at__isnull=True).update(
            used_at=timezone.now()
        )
        if not used:  # a second request with the same link won the race
            raise UserError("This invitation link was already used.", status=410)
        user.set_password(password)
        user.save(update_fields=["password"])
    log.info("user %s set their password with an invitation", user.pk)
    return user


def change_password(user, current: str, password: str, again: str) -> None:
    if not user.check_password(current or ""):
        raise UserError("Your current password is not right.")
    _check_password(password, again, user)
    user.set_password(password)
    user.save(update_fields=["password"])
    log.info("user %s changed their password", user.pk)
