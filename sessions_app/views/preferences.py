"""The theme menu of every page: store the choice on the user, and hand it to every
template (`theme_context`, a context processor) so `<html data-theme>` is rendered by
the server and a reload never flashes the other theme."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme

from sessions_app.params import form
from sessions_app.responses import piweb_view
from sessions_app.selectors.preferences import theme_for
from sessions_app.services import preferences


def theme_context(request) -> dict:
    """`ui_theme` for base.html; a context processor (piweb/settings.py)."""
    return {"ui_theme": theme_for(getattr(request, "user", None))}


@piweb_view(methods=("POST",), notice_errors=True)
def set_theme(request):
    params = form(request)
    preferences.set_theme(request.user, params.text("theme"))
    if request.htmx:  # the page already shows the new theme (piweb.js set it on click)
        return HttpResponse(status=204)
    back = params.text("next")
    if not url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure()):
        back = "/"
    return redirect(back)
