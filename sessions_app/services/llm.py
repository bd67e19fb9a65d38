"""Changes to a user's model choice, and the Models page's test request.

The catalog, the keys and the resolution of a request's model are reads:
`selectors/llm.py`.
"""

from __future__ import annotations

from sessions_app.agent.providers.base import THINKING_LEVELS, ResolvedModel
from sessions_app.selectors.llm import (
    HOW_TO_CONFIGURE,
    KEY_SOURCE_LABELS,
    ModelUnavailable,
    find_model,
    resolve_model,
)


class ChoiceError(ValueError):
    """A default that cannot be stored (message safe to show)."""


def set_default(user, ref: str, thinking_level: str):
    """Store the user's default model (``provider/id``, "" = none: the server's default)
    and thinking level ("" = pi's settings.json, else off)."""
    from django.db import transaction

    from sessions_app.models import ModelPreference

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
    import time

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
    return True, (
        f"{ref} answered {reply[:80]!r} in {took:.1f}s "
        f"(key: {KEY_SOURCE_LABELS[resolved.key_source]})."
    )


def _tiny_request(resolved: ResolvedModel) -> str:
    """Through the providers package when it has the model's API, else (openai-completions)
    through the openai SDK."""
    from sessions_app.agent import providers

    stream_for = getattr(providers, "stream_for", None)
    if stream_for is not None:
        from sessions_app.agent.providers.base import ModelRequest

        request = ModelRequest(
            system_prompt="",
            messages=[{"role": "user", "content": [{"type": "text", "text": TEST_PROMPT}]}],
            max_tokens=16,
        )
        message = stream_for(resolved.api)(resolved, request)
        if message.get("stopReason") == "error":
            raise RuntimeError(message.get("errorMessage") or "error")
        return "".join(
            b.get("text", "") for b in message.get("content") or [] if b.get("type") == "text"
        )
    if resolved.api != "openai-completions":
        raise ModelUnavailable(f"{resolved.api} cannot be called by this piweb yet.")
    import openai

    client = openai.OpenAI(
        base_url=resolved.model["baseUrl"],
        api_key=resolved.api_key or "not-needed",
        default_headers=resolved.headers or None,
        timeout=min(resolved.timeout, 60.0),
        max_retries=0,
    )
    done = client.chat.completions.create(
        model=resolved.model_id,
        messages=[{"role": "user", "content": TEST_PROMPT}],
        max_completion_tokens=16,
    )
    return (done.choices[0].message.content or "").strip() if done.choices else ""
