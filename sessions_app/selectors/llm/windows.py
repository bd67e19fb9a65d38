"""How much a model sees: the catalog window of a model or of the one a leaf records, the
label the pages show, and the compaction settings measured against it (piweb's defaults,
pi's ``settings.json``, the session's own).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from sessions_app.agent.providers.base import ResolvedModel
from sessions_app.core.compaction import CompactionSettings

from .catalog import ModelProfile, catalog, default_model_ref, pi_settings, resolve_profile
from .project_settings import project_settings


def window_of(provider: str | None, model_id: str | None) -> int | None:
    """The catalog window of a model (by provider and id; by id alone when the provider
    is unknown and the id names one model), None when the catalog does not have it."""
    cat = catalog()
    model = cat.find(provider, model_id)
    if model is None and model_id:
        same = {m["contextWindow"] for m in cat.models if m["id"] == model_id}
        if len(same) == 1:
            return int(same.pop())
    return int(model["contextWindow"]) if model else None


def context_window(model: Any = None) -> int:
    """The context window of a model: a ResolvedModel, a ModelProfile, a catalog dict, a
    ``{"provider", "modelId"}`` reference (as the core's context gives it) or a
    ``provider/id`` string; PIWEB_LLM_CONTEXT_WINDOW when unknown. The one reading of that
    setting (the agent run, the inspector, compaction, the context chart, the header)."""
    window = None
    if isinstance(model, ResolvedModel):
        window = model.context_window or None
    elif isinstance(model, ModelProfile):
        window = model.context_window
    elif isinstance(model, dict) and "contextWindow" in model:
        window = int(model["contextWindow"] or 0) or None
    elif isinstance(model, dict):
        window = window_of(model.get("provider"), model.get("modelId") or model.get("id"))
    elif isinstance(model, str) and model:
        provider, _, model_id = model.partition("/")
        window = window_of(provider, model_id) if model_id else window_of(None, provider)
        if window is None and model_id:
            window = window_of(None, model)
    return window or settings.PIWEB_LLM_CONTEXT_WINDOW


def window_label(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:g}M"
    return f"{tokens / 1000:g}k" if tokens >= 1000 else str(tokens)


def session_window(session, recorded: dict | None = None, user=None) -> int:
    """The context window at a leaf: the catalog window of the model its path records
    (``{"provider", "modelId"}``), else that of the model a run there would use (the
    session's profile, else the owner's default), else PIWEB_LLM_CONTEXT_WINDOW."""
    if recorded:
        window = window_of(recorded.get("provider"), recorded.get("modelId"))
        if window:
            return window
    if session is not None and session.model_profile:
        profile = resolve_profile(session.model_profile)
        if profile is not None:
            return profile.context_window
    user = user if user is not None else getattr(session, "owner", None)
    ref = default_model_ref(user, project_settings(session, user))
    if ref is not None:
        window = window_of(*ref)
        if window:
            return window
    return settings.PIWEB_LLM_CONTEXT_WINDOW


def compaction_defaults() -> dict[str, Any]:
    """piweb's compaction defaults (PIWEB_COMPACTION_*) with pi's settings.json on top,
    in pi's keys."""
    glob = settings.PIWEB_COMPACTION
    merged = {
        "enabled": glob.get("enabled", True),
        "reserveTokens": glob.get("reserve_tokens", 16384),
        "keepRecentTokens": glob.get("keep_recent_tokens", 20000),
    }
    merged.update(pi_settings().compaction)
    return merged


def compaction_settings(session) -> CompactionSettings:
    """Effective settings: global PIWEB_COMPACTION, pi's settings.json (its
    ``compaction`` object), then the session's overrides.

    ``Session.settings["compaction"]`` uses pi's keys (enabled, reserveTokens,
    keepRecentTokens).
    """
    merged = compaction_defaults()
    own = (session.settings or {}).get("compaction") or {}
    merged.update({k: v for k, v in own.items() if k in merged})
    return CompactionSettings.from_dict(merged)


def branch_summary_reserve(default: int) -> int:
    return int(pi_settings().branch_summary.get("reserveTokens") or default)
