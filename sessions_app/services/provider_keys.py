"""Storing and removing users' own API keys (encrypted with `selectors.provider_keys.fernet`)."""

from __future__ import annotations

import logging

from django.db import transaction

from sessions_app.core.errors import ServiceError
from sessions_app.models import ProviderKey
from sessions_app.selectors.provider_keys import fernet

log = logging.getLogger(__name__)

MAX_KEY_CHARS = 4096
_PROVIDER_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_.")


class KeyError_(ServiceError):
    """A key or provider name that cannot be stored (message safe to show)."""

    code = "provider_key"


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
    token = fernet().encrypt(key.encode())
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
