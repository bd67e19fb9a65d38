"""Personal access tokens for the sync API: created (the secret shown once), revoked, and
checked on every API request.

A token reads `pwt_<prefix>_<secret>`: the prefix (not secret) finds its row, the
SHA-256 of the whole token is what is stored and compared. A token is never logged.
Bad tokens are counted per client address in Redis, like failed logins: after
`PIWEB_LOGIN_FAILURE_LIMIT` of them within `PIWEB_LOGIN_COOLOFF_MINUTES`, that address
gets 429 until the window ends, whatever token it sends.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from sessions_app.core.errors import ServiceError
from sessions_app.models import AccessToken
from sessions_app.selectors.shared_state import redis_client, redis_key
from sessions_app.selectors.sync import token_by_prefix

TOKEN_PREFIX = "pwt_"
MAX_DAYS = 3650


class TokenError(ServiceError):
    """A token that does not give access (401), or too many of them (429)."""

    status = 401
    code = "token"


class TokenRequestError(ServiceError):
    """A token that cannot be made as asked (its name, its days)."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(user, name: str, *, days: int | None = 90) -> tuple[AccessToken, str]:
    """A new sync token for `user`; returns the row and the token, which is not kept."""
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise TokenRequestError("Give the token a name of 1 to 100 characters.")
    if days is not None and not 1 <= days <= MAX_DAYS:
        raise TokenRequestError(f"A token lasts 1 to {MAX_DAYS} days.")
    prefix = secrets.token_hex(6)
    token = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    row = AccessToken.objects.create(
        user=user,
        name=name,
        prefix=prefix,
        digest=_digest(token),
        expires_at=timezone.now() + timedelta(days=days) if days else None,
    )
    return row, token


def revoke_token(user, token_pk: int) -> bool:
    """Revoke one of `user`'s tokens; False when they have no such live token."""
    return bool(
        AccessToken.objects.filter(pk=token_pk, user=user, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
    )


def _window_seconds() -> int:
    return max(60, int(float(settings.PIWEB_LOGIN_COOLOFF_MINUTES) * 60))


def _failures_key(address: str) -> str:
    return redis_key("token_failures", address or "unknown")


def _check_rate(address: str) -> None:
    count = redis_client().get(_failures_key(address))
    if count is not None and int(count) >= settings.PIWEB_LOGIN_FAILURE_LIMIT:
        raise TokenError("Too many bad tokens from this address; try again later.", status=429)


def _refuse(address: str, message: str) -> TokenError:
    key = _failures_key(address)
    client = redis_client()
    with client.pipeline() as pipe:
        pipe.incr(key)
        pipe.expire(key, _window_seconds())
        pipe.execute()
    return TokenError(message)


def authenticate(token: str, address: str, *, scope: str = AccessToken.Scope.SYNC):
    """The user a token stands for (and its last use noted), or a TokenError: 401 for a
    missing, unknown, revoked or expired token, 429 when this address sent too many bad
    ones (a request with no token at all is not counted: nothing was guessed)."""
    if not token:
        raise TokenError("This needs a token: Authorization: Bearer <token>.")
    _check_rate(address)
    prefix, _, secret = token.removeprefix(TOKEN_PREFIX).partition("_")
    row = None
    if token.startswith(TOKEN_PREFIX) and prefix and secret:
        row = token_by_prefix(prefix)
    if row is None or not hmac.compare_digest(row.digest, _digest(token)):
        raise _refuse(address, "This token is not valid.")
    now = timezone.now()
    if row.revoked_at is not None:
        raise _refuse(address, "This token was revoked.")
    if row.expires_at is not None and row.expires_at <= now:
        raise _refuse(address, "This token has expired.")
    if row.scope != scope or not row.user.is_active:
        raise _refuse(address, "This token does not give access to this.")
    if row.last_used_at is None or now - row.last_used_at > timedelta(minutes=1):
        with transaction.atomic():
            AccessToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row.user
