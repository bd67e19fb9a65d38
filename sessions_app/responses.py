"""Responses the views share: the one notice partial (for htmx swaps and the chat
panel's fetch calls), plain-text errors for everything else, and export downloads.

htmx is configured in `templates/base.html` (`<meta name="htmx-config">`) to swap 4xx
responses too, so an error is returned with its real status and the person still sees
the notice. Client events go out through django-htmx's `trigger_client_event`.
"""

from __future__ import annotations

from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django_htmx.http import reswap, retarget, trigger_client_event

from sessions_app.presentation import exports
from sessions_app.services import sessions

NOTICE_TEMPLATE = "sessions_app/_notice.html"
LEVELS = ("info", "ok", "error")


def notice(
    request,
    message: str,
    *,
    level: str = "info",
    status: int = 200,
    triggers: dict | None = None,
    target: str | None = None,
    **extra,
) -> HttpResponse:
    """The notice partial: `message` escaped, `level` one of LEVELS, the real status.

    `triggers` ({event: detail}) become client events; `target` (a CSS selector) makes
    htmx put the notice there instead of the requesting element's own target.
    """
    if level not in LEVELS:
        raise ValueError(f"Unknown notice level {level!r}.")
    context = {"message": message, "level": level, **extra}
    response = render(request, NOTICE_TEMPLATE, context, status=status)
    for name, detail in (triggers or {}).items():
        trigger_client_event(response, name, detail)
    if target and request.htmx:
        retarget(response, target)
        reswap(response, "innerHTML")
    return response


def plain_text(message: str, status: int) -> HttpResponse:
    response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    return response


def download(response: HttpResponse, filename: str, *, inline: bool = False) -> HttpResponse:
    """A file response's disposition (inline or attachment, with its name), never sniffed."""
    response["Content-Disposition"] = (
        f'{"inline" if inline else "attachment"}; filename="{filename}"'
    )
    response["X-Content-Type-Options"] = "nosniff"
    return response


def bad_request(request, message: str, status: int = 400) -> HttpResponse:
    """An error for the person: the escaped notice for htmx, else plain text. Messages may
    quote what was sent (an export format, an entry id): never as markup."""
    if request.htmx:
        return notice(request, message, level="error", status=status)
    return plain_text(message, status)


def export_response(request, access, fmt: str, leaf: str | None, visible: set | None = None):
    """A session (or its branch ending at `leaf`) exported as a download; `visible` is a
    share link's entries. An export the service refuses is the person's error."""
    try:
        export = exports.export_session(access.session, fmt, leaf, visible=visible)
    except exports.ExportError as exc:
        return bad_request(request, str(exc))
    sessions.record_activity(access.session, request.user, "exported", format=fmt, leaf=leaf)
    if export.streams:  # (the pi JSONL: never the whole file in memory)
        response = StreamingHttpResponse(export.content, content_type=export.content_type)
    else:
        response = HttpResponse(export.content, content_type=export.content_type)
    inline = request.GET.get("inline") == "1" and fmt != "html"
    return download(response, export.filename, inline=inline)
