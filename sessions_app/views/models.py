"""The Models page (/models/): the user's own API keys, a test request, and their default
model and thinking level. Plain forms (POST, then back to the page); keys are never
shown back, only where a provider's key comes from."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from sessions_app.models import ModelPreference
from sessions_app.services import llm, provider_keys


@login_required
@require_GET
def models_page(request):
    user = request.user
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
    available = llm.available_models(user)
    groups: dict[str, list] = {}
    for choice in available:
        groups.setdefault(choice.provider, []).append(choice)
    pref = ModelPreference.objects.filter(user=user).first()
    default = llm.default_model_ref(user)
    context = {
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
    return render(request, "sessions_app/models/page.html", context)


@login_required
@require_POST
def save_key(request):
    try:
        provider_keys.set_key(
            request.user, request.POST.get("provider", ""), request.POST.get("key", "")
        )
    except provider_keys.KeyError_ as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"Saved your key for {request.POST.get('provider', '').strip().lower()}."
        )
    return redirect("sessions_app:models_page")


@login_required
@require_POST
def remove_key(request):
    provider = request.POST.get("provider", "")
    if provider_keys.remove_key(request.user, provider):
        messages.success(request, f"Removed your key for {provider}.")
    else:
        messages.error(request, f"You have no key for {provider}.")
    return redirect("sessions_app:models_page")


@login_required
@require_POST
def test_model(request):
    ok, message = llm.try_model(request.user, request.POST.get("model", ""))
    (messages.success if ok else messages.error)(
        request, ("Test passed: " if ok else "Test failed: ") + message
    )
    return redirect("sessions_app:models_page")


@login_required
@require_POST
def save_default(request):
    try:
        llm.set_default(
            request.user, request.POST.get("model", ""), request.POST.get("thinking", "")
        )
    except llm.ChoiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Saved your default model and thinking level.")
    return redirect("sessions_app:models_page")
