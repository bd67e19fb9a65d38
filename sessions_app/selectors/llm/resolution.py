"""The model a request uses, ready to call: a named model or the user's default with the key
this user's request uses (``resolve_model``), the one a run at a leaf uses
(``resolve_for_session``), the lists of models a user can pick, and the one retry policy of
model calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from sessions_app.agent.providers.base import ResolvedModel
from sessions_app.agent.retry import RetryPolicy
from sessions_app.core import pi_config
from sessions_app.core.costs import price_per_million
from sessions_app.core.pi_config import (
    clamp_thinking_level,
    supported_thinking_levels,
)
from sessions_app.selectors import provider_keys

from .catalog import CALLABLE_APIS, catalog, default_model_ref, pi_settings, resolve_profile
from .keys import KeyStatus, ModelUnavailable, key_status, request_headers, resolve_key
from .project_settings import project_settings
from .windows import window_label


def retry_policy() -> RetryPolicy:
    """The one retry policy of model calls (the agent run and the summaries)."""
    return RetryPolicy(
        retries=settings.PIWEB_LLM_RETRIES,
        base_delay=settings.PIWEB_LLM_RETRY_BASE_DELAY,
        max_delay=settings.PIWEB_LLM_RETRY_MAX_DELAY,
    )


def resolve_model(user, provider: str | None = None, model_id: str | None = None, *, project=None):
    """The model ``provider/model_id`` (default: the user's default, where a `project`'s
    own settings may name it) ready to call with the key this user's request uses; None
    when no model is configured. Raises ModelUnavailable for a named model that is
    unknown or has no key."""
    cat = catalog()
    if not provider or not model_id:
        ref = default_model_ref(user, project)
        if ref is None:
            return None
        provider, model_id = ref
    model = cat.find(provider, model_id)
    if model is None:
        raise ModelUnavailable(f"Unknown model: {provider}/{model_id}.")
    key, source = resolve_key(user, model, cat)
    profile = cat.env_profiles.get((provider, model_id))
    timeout = profile.timeout if profile is not None else settings.PIWEB_LLM_TIMEOUT
    return ResolvedModel(
        model=dict(model),
        api_key=key,
        key_source=source,
        headers=request_headers(model, key, cat),
        timeout=timeout,
    )


def resolve_for_session(session, user, recorded: dict | None = None):
    """The model a run at a leaf uses (see the module doc); ``recorded`` is the
    ``{"provider", "modelId"}`` the path records. None: no model configured."""
    cat = catalog()
    refused = None
    if recorded and cat.find(recorded.get("provider"), recorded.get("modelId")):
        # The model the branch uses, as pi continues a session with its model.
        try:
            return resolve_model(user, recorded["provider"], recorded["modelId"])
        except ModelUnavailable as exc:
            refused = exc
    if session is not None and session.model_profile:
        # The environment profile the session was given in piweb (e.g. an imported
        # session continued on a local model).
        profile = resolve_profile(session.model_profile)
        if profile is not None:
            return resolve_model(user, profile.provider, profile.model)
    if refused is not None:
        # Never moved silently to another model: the user picks one or adds a key.
        raise ModelUnavailable(f"{refused} Or pick another model for this session.")
    return resolve_model(user, project=project_settings(session, user))


@dataclass(frozen=True)
class ModelChoice:
    """One line of the model lists (the picker, the Models page, ``manage.py models``)."""

    model: dict[str, Any]
    source: str  # pi / models.json / env
    key: KeyStatus
    enabled: bool = True

    provider = property(lambda self: self.model["provider"])
    id = property(lambda self: self.model["id"])
    ref = property(lambda self: f"{self.model['provider']}/{self.model['id']}")
    api = property(lambda self: self.model["api"])
    window = property(lambda self: int(self.model.get("contextWindow") or 0))
    max_tokens = property(lambda self: int(self.model.get("maxTokens") or 0))
    reasoning = property(lambda self: bool(self.model.get("reasoning")))
    callable = property(lambda self: self.model["api"] in CALLABLE_APIS)
    thinking_levels = property(lambda self: supported_thinking_levels(self.model))

    @property
    def prices(self) -> tuple[float, float]:
        return price_per_million(self.model)

    @property
    def window_label(self) -> str:
        return window_label(self.window)

    @property
    def price_label(self) -> str:
        inp, out = self.prices
        return "no price" if not inp and not out else f"${inp:g} in / ${out:g} out per M"

    @property
    def label(self) -> str:
        return f"{self.id} · {self.window_label} · {self.price_label}"

    def as_json(self) -> dict[str, Any]:
        inp, out = self.prices
        return {
            "provider": self.provider,
            "id": self.id,
            "name": self.model.get("name") or self.id,
            "api": self.api,
            "contextWindow": self.window,
            "maxTokens": self.max_tokens,
            "reasoning": self.reasoning,
            "input": list(self.model.get("input") or ["text"]),
            "inputPerM": inp,
            "outputPerM": out,
            "keySource": self.key.source,
            "keyDetail": self.key.detail,
            "source": self.source,
            "callable": self.callable,
            "enabled": self.enabled,
        }


def all_models(user) -> list[ModelChoice]:
    """Every catalog model with this user's key status."""
    cat = catalog()
    keys = provider_keys.user_providers(user)
    enabled = pi_settings().enabled_models
    statuses: dict[str, KeyStatus] = {}
    out = []
    for model in cat.models:
        provider = model["provider"]
        if provider not in statuses:
            statuses[provider] = key_status(user, provider, cat=cat, user_keys=keys)
        on = enabled is None or any(
            pi_config.model_matches(p, provider, model["id"]) for p in enabled
        )
        out.append(ModelChoice(model, cat.source(model), statuses[provider], on))
    return out


def available_models(user) -> list[ModelChoice]:
    """The models this user can call now: a key and an API piweb speaks, sorted by
    provider then id."""
    return sorted(
        (c for c in all_models(user) if c.key.available and c.callable),
        key=lambda c: (c.provider, c.id),
    )


def thinking_for(model: dict[str, Any], level: str | None) -> str:
    """A thinking level clamped to what the model supports (pi's clampThinkingLevel)."""
    return clamp_thinking_level(model, level or "off")
