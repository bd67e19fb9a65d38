"""The Models page's reads: every provider with where its key comes from for this user,
the models they can call, and their default (never a key)."""

from __future__ import annotations

from sessions_app.models import ModelPreference
from sessions_app.selectors import llm, provider_keys


def models_page_context(user) -> dict:
    everything = llm.all_models(user)
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
    groups: dict[str, list] = {}
    for choice in llm.available_models(user):
        groups.setdefault(choice.provider, []).append(choice)
    pref = ModelPreference.objects.filter(user=user).first()
    default = llm.default_model_ref(user)
    return {
        "providers": sorted(providers.values(), key=lambda r: r["provider"]),
        "groups": sorted(groups.items()),
        "own_keys": sorted(hints),
        "pref_ref": f"{pref.provider}/{pref.model_id}" if pref and pref.model_id else "",
        "pref_thinking": pref.thinking_level if pref else "",
        "default_ref": "/".join(default) if default else "",
        "default_thinking": llm.default_thinking_level(user),
        "levels": llm.THINKING_LEVELS,
        "catalog_error": llm.catalog().error,
        "agent_dir": llm.agent_dir().path,
    }
