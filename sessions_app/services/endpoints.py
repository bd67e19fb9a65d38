"""Model endpoints an admin adds on the Models page, for everyone: an OpenAI-compatible,
Anthropic or Google API at a base URL, under a provider name, with its models (one a line, read by
`core/endpoints.py`) and an optional key, stored
encrypted like users' own keys (`selectors.provider_keys.fernet`) and never shown back.

The catalog (`selectors/llm/catalog.py`) builds their models as models.json's custom
providers, and the key resolution (`selectors/llm/keys.py`) uses the endpoint's key
after a user's own key for that provider.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from django.db import transaction

from sessions_app.core import pi_config
from sessions_app.core.endpoints import ENDPOINT_APIS, EndpointError, parse_models
from sessions_app.models import ModelEndpoint
from sessions_app.selectors.llm.catalog import catalog, endpoint
from sessions_app.selectors.provider_keys import fernet
from sessions_app.selectors.users import require_admin
from sessions_app.services.provider_keys import MAX_KEY_CHARS, KeyError_, check_provider

log = logging.getLogger(__name__)


def _check_base_url(url: str) -> str:
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or len(url) > 500:
        raise EndpointError("The base URL must be an http:// or https:// address.")
    return url.rstrip("/")


def save_endpoint(
    actor, provider: str, api: str, base_url: str, models: str, key: str = ""
) -> ModelEndpoint:
    """Add an endpoint, or replace the one of that provider name (an empty key keeps the
    stored one)."""
    require_admin(actor)
    try:
        provider = check_provider(provider)
    except KeyError_ as exc:
        raise EndpointError(str(exc)) from None
    if api not in ENDPOINT_APIS:
        raise EndpointError("Choose the API the endpoint speaks.")
    base_url = _check_base_url(base_url)
    specs = parse_models(models)
    existing = endpoint(provider)
    if existing is None:
        cat = catalog()
        if any(m["provider"] == provider for m in cat.models):
            raise EndpointError(
                f"{provider} is already a provider (pi's, models.json's or the server's): "
                "choose another name."
            )
    error = pi_config.check_endpoint(provider, pi_config.endpoint_provider(api, base_url, specs))
    if error:
        raise EndpointError(error)
    key = (key or "").strip()
    if len(key) > MAX_KEY_CHARS or any(c in key for c in "\r\n\0"):
        raise EndpointError("That does not look like an API key (too long or several lines).")
    with transaction.atomic():
        row = existing or ModelEndpoint(provider=provider, created_by=actor)
        row.api, row.base_url, row.model_list = api, base_url, specs
        if key:
            row.encrypted_key = fernet().encrypt(key.encode())
            row.hint = key[-4:] if len(key) >= 12 else ""
        row.save()
    log.info("user %s saved the endpoint %s (%d models)", actor.pk, provider, len(specs))
    return row


def delete_endpoint(actor, provider: str) -> bool:
    require_admin(actor)
    deleted, _ = ModelEndpoint.objects.filter(provider=provider).delete()
    if deleted:
        log.info("user %s removed the endpoint %s", actor.pk, provider)
    return bool(deleted)
