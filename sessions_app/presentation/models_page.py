"""The Models page's reads: every provider with where its key comes from for this user,
the models they can call, and their default (never a key)."""

from __future__ import annotations

from sessions_app.core.endpoints import ENDPOINT_APIS, models_text
from sessions_app.core.pi_config import THINKING_LEVELS
from sessions_app.models import ModelPreference
from sessions_app.selectors import provider_keys
from sessions_app.selectors.llm.catalog import (
    agent_dir,
    catalog,
    default_model_ref,
    default_thinking_level,
    endpoint_rows,
)
from sessions_app.selectors.llm.resolution import all_models, available_models
from sessions_app.selectors.users import is_admin


def models_page_context(user) -> dict:
    everything = all_models(user)
    providers: dict[str, dict] = {}
    for choice in everything:
        row = providers.setdefault(
            choice.provider, {"provider": choice.provider, "key": choice.key, "count": 0}
        )
        row["count"] += 1
    hints = provider_keys.user_providers(user)
    for provider, hint in hints.items():
        providers.setdefault(provider, {"provider": provider, "key": None, "count": 0})
        providers[provider]["hint"] = hint
    rows = sorted(providers.values(), key=lambda r: r["provider"])
    for row in rows:  # a key of one's own, or one the server has: its models can run
        row["ready"] = bool(row.get("hint")) or bool(row["key"] and row["key"].available)
    groups: dict[str, list] = {}
    for choice in available_models(user):
        groups.setdefault(choice.provider, []).append(choice)
    pref = ModelPreference.objects.filter(user=user).first()
    default = default_model_ref(user)
    return {
        "providers": rows,
        "ready_providers": [row for row in rows if row["ready"]],
        "other_providers": [row for row in rows if not row["ready"]],
        "groups": sorted(groups.items()),
        "own_keys": sorted(hints),
        "pref_ref": f"{pref.provider}/{pref.model_id}" if pref and pref.model_id else "",
        "pref_thinking": pref.thinking_level if pref else "",
        "default_ref": "/".join(default) if default else "",
        "default_thinking": default_thinking_level(user),
        "levels": THINKING_LEVELS,
        "catalog_error": catalog().error,
        "agent_dir": agent_dir().path,
        "is_admin": is_admin(user),
        "endpoints": [
            {
                **row,
                "models_text": models_text(row["model_list"]),
                "api_label": ENDPOINT_APIS.get(row["api"], row["api"]),
            }
            for row in endpoint_rows()
        ],
        "endpoint_apis": sorted(ENDPOINT_APIS.items()),
    }
