"""The Models page (/models/): the user's own API keys, a test request, their default
model and thinking level, and (admins) the endpoints added for everyone. Plain forms (POST, then back to the page); keys are never
shown back, only where a provider's key comes from."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render

from sessions_app.params import form
from sessions_app.presentation.models_page import models_page_context
from sessions_app.responses import piweb_view
from sessions_app.services import endpoints, llm, provider_keys


@piweb_view()
def models_page(request):
    return render(request, "sessions_app/models/page.html", models_page_context(request.user))


@piweb_view(methods=("POST",))
def save_key(request):
    params = form(request)
    provider = params.text("provider")
    try:
        provider_keys.set_key(request.user, provider, params.text("key"))
    except provider_keys.KeyError_ as exc:  # a message on the Models page
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Saved your key for {provider.strip().lower()}.")
    return redirect("sessions_app:models_page")


@piweb_view(methods=("POST",))
def remove_key(request):
    provider = form(request).text("provider")
    if provider_keys.remove_key(request.user, provider):
        messages.success(request, f"Removed your key for {provider}.")
    else:
        messages.error(request, f"You have no key for {provider}.")
    return redirect("sessions_app:models_page")


@piweb_view(methods=("POST",))
def test_model(request):
    ok, message = llm.try_model(request.user, form(request).text("model"))
    (messages.success if ok else messages.error)(
        request, ("Test passed: " if ok else "Test failed: ") + message
    )
    return redirect("sessions_app:models_page")


@piweb_view(methods=("POST",))
def save_default(request):
    params = form(request)
    try:
        llm.set_default(request.user, params.text("model"), params.text("thinking"))
    except llm.ChoiceError as exc:  # a message on the Models page
        messages.error(request, str(exc))
    else:
        messages.success(request, "Saved your default model and thinking level.")
    return redirect("sessions_app:models_page")


@piweb_view(methods=("POST",))
def save_endpoint(request):
    """Add or replace an endpoint (admins: services.endpoints refuses anyone else, 403)."""
    params = form(request)
    try:
        row = endpoints.save_endpoint(
            request.user,
            params.text("provider", limit=200),
            params.text("api", limit=40),
            params.text("base_url", limit=600),
            params.text("models", limit=40_000),
            params.text("key", limit=5000),
        )
    except endpoints.EndpointError as exc:  # a message on the Models page
        messages.error(request, str(exc))
    else:
        count = len(row.model_list)
        messages.success(
            request,
            f"Saved the endpoint {row.provider}: {count} model{'s' if count != 1 else ''}, "
            "for everyone.",
        )
    return redirect("sessions_app:models_page")


@piweb_view(methods=("POST",))
def remove_endpoint(request):
    provider = form(request).text("provider", limit=200)
    if endpoints.delete_endpoint(request.user, provider):
        messages.success(request, f"Removed the endpoint {provider}.")
    else:
        messages.error(request, f"There is no endpoint {provider}.")
    return redirect("sessions_app:models_page")
