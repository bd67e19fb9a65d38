"""The sync page (/sync/: a user's tokens, created and shown once, revoked) and the sync
client served for download (/sync/piweb_sync.py), so a laptop needs no clone."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from sessions_app.core.errors import ServiceError
from sessions_app.params import form
from sessions_app.responses import piweb_view
from sessions_app.selectors import sync as sync_selectors
from sessions_app.services import sync_tokens


def _page(request, **extra):
    context = {
        "tokens": sync_selectors.tokens_of(request.user),
        "server_url": request.build_absolute_uri("/").rstrip("/"),
        "client_url": request.build_absolute_uri(reverse("sessions_app:sync_client")),
        **extra,
    }
    return render(request, "sessions_app/sync/tokens.html", context)


@piweb_view(methods=("GET", "POST"))
def tokens(request):
    if request.method == "GET":
        return _page(request)
    params = form(request)
    try:
        row, token = sync_tokens.create_token(
            request.user,
            params.stripped("name"),
            days=params.integer("days", 90, low=1, high=sync_tokens.MAX_DAYS),
        )
    except ServiceError as exc:  # a message on the page
        messages.error(request, str(exc))
        return redirect("sessions_app:sync_tokens")
    response = _page(request, new_token=token, new_token_name=row.name)
    response["Cache-Control"] = "no-store"
    return response


@piweb_view(methods=("POST",))
def revoke(request, token_pk: int):
    if sync_tokens.revoke_token(request.user, token_pk):
        messages.success(request, "Token revoked.")
    else:
        messages.error(request, "You have no such token.")
    return redirect("sessions_app:sync_tokens")


@piweb_view(login=False)
def client(request):
    """The client itself: one standard-library file, the same for everyone."""
    response = HttpResponse(
        sync_selectors.client_source(), content_type="text/x-python; charset=utf-8"
    )
    response["Content-Disposition"] = 'attachment; filename="piweb_sync.py"'
    return response
