"""Changes to a user's model choice, and the Models page's test request.

The catalog, the keys and the resolution of a request's model are reads:
`selectors/llm/`.
"""

from __future__ import annotations

import time

from django.db import transaction

from sessions_app.agent import providers
from sessions_app.agent.providers.base import ModelRequest, ResolvedModel
from sessions_app.core.errors import ServiceError
from sessions_app.core.pi_config import THINKING_LEVELS
from sessions_app.models import ModelPreference
from sessions_app.selectors.llm.catalog import HOW_TO_CONFIGURE, find_model
from sessions_app.selectors.llm.keys import KEY_SOURCE_LABELS, ModelUnavailable
from sessions_app.selectors.llm.resolution import resolve_model


class ChoiceError(ServiceError):
    """A default that cannot be stored (message safe to show)."""

    code = "model_choice"


def set_default(user, ref: str, thinking_level: str):
    """Store the user's default model (``provider/id``, "" = none: the server's default)
    and thinking level ("" = pi's settings.json, else off)."""
    provider, model_id = "", ""
    if ref:
        provider, _, model_id = ref.partition("/")
        if not model_id or find_model(provider, model_id) is None:
            raise ChoiceError(f"Unknown model: {ref}.")
    if thinking_level and thinking_level not in THINKING_LEVELS:
        raise ChoiceError(f"Unknown thinking level: {thinking_level}.")
    with transaction.atomic():
        pref, _ = ModelPreference.objects.select_for_update().get_or_create(user=user)
        pref.provider, pref.model_id, pref.thinking_level = provider, model_id, thinking_level
        pref.save()
    return pref


TEST_PROMPT = "Reply with the single word: ok"


def try_model(user, ref: str) -> tuple[bool, str]:
    """One tiny request to a model with the key this user's runs would use. Returns
    (ok, message); the message names the model and key source, never the key."""
    provider, _, model_id = (ref or "").partition("/")
    try:
        resolved = resolve_model(user, provider, model_id)
    except ModelUnavailable as exc:
        return False, str(exc)
    if resolved is None:
        return False, HOW_TO_CONFIGURE
    started = time.monotonic()
    try:
        reply = _tiny_request(resolved)
    except Exception as exc:  # the provider's error, with the key scrubbed
        message = str(exc)
        if resolved.api_key:
            message = message.replace(resolved.api_key, "***")
        return False, f"{ref} ({KEY_SOURCE_LABELS[resolved.key_source]}): {message[:500]}"
    took = time.monotonic() - started
    said = " ".join(reply.split())[:80]  # one line: a reply's line breaks are not shown as \\n
    return True, (
        f"{ref} answered '{said}' in {took:.1f}s (key: {KEY_SOURCE_LABELS[resolved.key_source]})."
    )


def _tiny_request(resolved: ResolvedModel) -> str:
    """The test prompt through the providers module of the model's API; the reply's text."""
    request = ModelRequest(
        system_prompt="",
        messages=[{"role": "user", "content": [{"type": "text", "text": TEST_PROMPT}]}],
        max_tokens=16,
    )
    message = providers.stream_for(resolved.api)(resolved, request)
    if message.get("stopReason") == "error":
        raise RuntimeError(message.get("errorMessage") or "error")
    return "".join(
        b.get("text", "") for b in message.get("content") or [] if b.get("type") == "text"
    )
