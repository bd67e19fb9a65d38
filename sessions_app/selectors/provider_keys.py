"""Users' own API keys, one per provider, stored encrypted.

The Fernet key comes from PIWEB_KEY_ENCRYPTION_KEY (a Fernet key: urlsafe base64 of 32
bytes) or, when that is unset, from SECRET_KEY through HKDF-SHA256 (salt and info fixed
to piweb's purpose), so a database dump alone never holds a usable key. Changing the
secret makes the stored keys unreadable: they are then treated as absent (each user
adds theirs again) and never raise.

Keys never leave this module except to the one caller that makes a request
(`services.llm.resolve_model`); they are not logged, not shown back (only the last four
characters, as a hint) and not part of any export.
"""

from __future__ import annotations

import base64
import functools
import logging

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.db import transaction

from sessions_app.models import ProviderKey

log = logging.getLogger(__name__)

MAX_KEY_CHARS = 4096
_PROVIDER_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_.")


class KeyError_(ValueError):
    """A key or provider name that cannot be stored (message safe to show)."""


@functools.lru_cache(maxsize=4)
def _fernet_for(explicit: str, secret: str) -> Fernet:
    if explicit:
        return Fernet(explicit.encode())
    derived = HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=b"piweb-provider-keys",
        info=b"piweb provider api keys v1",
    ).derive(secret.encode())
    return Fernet(base64.urlsafe_b64encode(derived))


def _fernet() -> Fernet:
    return _fernet_for(settings.PIWEB_KEY_ENCRYPTION_KEY, settings.SECRET_KEY)


def check_provider(provider: str) -> str:
    provider = (provider or "").strip().lower()
    if not provider or len(provider) > 100 or not set(provider) <= _PROVIDER_CHARS:
        raise KeyError_("Choose a provider (letters, digits, '-', '_' or '.').")
    return provider


def set_key(user, provider: str, key: str) -> ProviderKey:
    """Store (or replace) the user's key for a provider."""
    provider = check_provider(provider)
    key = (key or "").strip()
    if not key:
        raise KeyError_("Paste the API key.")
    if len(key) > MAX_KEY_CHARS or any(c in key for c in "\r\n\0"):
        raise KeyError_("That does not look like an API key (too long or several lines).")
    token = _fernet().encrypt(key.encode())
    with transaction.atomic():
        row, _ = ProviderKey.objects.update_or_create(
            user=user,
            provider=provider,
            defaults={"encrypted_key": token, "hint": key[-4:] if len(key) >= 12 else ""},
        )
    log.info("user %s stored an API key for %s", user.pk, provider)
    return row


def remove_key(user, provider: str) -> bool:
    deleted, _ = ProviderKey.objects.filter(user=user, provider=provider).delete()
    if deleted:
        log.info("user %s removed their API key for %s", user.pk, provider)
    return bool(deleted)


def user_key(user, provider: str) -> str | None:
    """The user's key for a provider, decrypted (None: none, or unreadable)."""
    if user is None or not getattr(user, "pk", None):
        return None
    row = ProviderKey.objects.filter(user=user, provider=provider).only("encrypted_key").first()
    if row is None:
        return None
    try:
        return _fernet().decrypt(bytes(row.encrypted_key)).decode()
    except (InvalidToken, ValueError):
        log.warning("user %s's key for %s cannot be decrypted (secret changed?)", user.pk, provider)
        return None


def user_providers(user) -> dict[str, str]:
    """The providers the user has a key for, with each key's hint (never the key)."""
    if user is None or not getattr(user, "pk", None):
        return {}
    return dict(ProviderKey.objects.filter(user=user).values_list("provider", "hint"))
