"""The Models page (/models/): the user's own API keys, a test request, and their default
model and thinking level. Plain forms (POST, then back to the page); keys are never
shown back, only where a provider's key comes from."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from sessions_app.presentation.models_page import models_page_context
from sessions_app.services import llm, provider_keys


@login_required
@require_GET
def models_page(request):
    return render(request, "sessions_app/models/page.html", models_page_context(request.user))


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
