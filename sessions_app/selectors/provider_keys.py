"""Users' own API keys, one per provider, and the keys of the endpoints admins add on the
Models page, stored encrypted: reading them (storing them: `services/provider_keys.py`,
`services/endpoints.py`).

The Fernet key comes from PIWEB_KEY_ENCRYPTION_KEY (a Fernet key: urlsafe base64 of 32
bytes) or, when that is unset, from SECRET_KEY through HKDF-SHA256 (salt and info fixed
to piweb's purpose), so a database dump alone never holds a usable key. Changing the
secret makes the stored keys unreadable: they are then treated as absent (each user
adds theirs again) and never raise.

Keys never leave this module except to the one caller that makes a request
(`selectors.llm.resolution.resolve_model`); they are not logged, not shown back (only the last four
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

from sessions_app.models import ModelEndpoint, ProviderKey

log = logging.getLogger(__name__)


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


def fernet() -> Fernet:
    return _fernet_for(settings.PIWEB_KEY_ENCRYPTION_KEY, settings.SECRET_KEY)


def user_key(user, provider: str) -> str | None:
    """The user's key for a provider, decrypted (None: none, or unreadable)."""
    if user is None or not getattr(user, "pk", None):
        return None
    row = ProviderKey.objects.filter(user=user, provider=provider).only("encrypted_key").first()
    if row is None:
        return None
    try:
        return fernet().decrypt(bytes(row.encrypted_key)).decode()
    except (InvalidToken, ValueError):
        log.warning("user %s's key for %s cannot be decrypted (secret changed?)", user.pk, provider)
        return None


def endpoint_key(provider: str) -> str | None:
    """The key of an endpoint added on the Models page, decrypted (None: none, or
    unreadable)."""
    row = ModelEndpoint.objects.filter(provider=provider).only("encrypted_key").first()
    if row is None or not row.encrypted_key:
        return None
    try:
        return fernet().decrypt(bytes(row.encrypted_key)).decode()
    except (InvalidToken, ValueError):
        log.warning("the key of the endpoint %s cannot be decrypted (secret changed?)", provider)
        return None


def user_providers(user) -> dict[str, str]:
    """The providers the user has a key for, with each key's hint (never the key)."""
    if user is None or not getattr(user, "pk", None):
        return {}
    return dict(ProviderKey.objects.filter(user=user).values_list("provider", "hint"))
