"""Responses the views share: the view gate (`session_view`, `piweb_view`), the one
notice partial (for htmx swaps and the chat panel's fetch calls), plain-text errors for
everything else, and export downloads.

htmx is configured in `templates/base.html` (`<meta name="htmx-config">`) to swap 4xx
responses too, so an error is returned with its real status and the person still sees
the notice. Client events go out through django-htmx's `trigger_client_event`.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import wraps
from typing import TypeVar

from axes.helpers import get_client_ip_address
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods
from django_htmx.http import reswap, retarget, trigger_client_event

from sessions_app.core.errors import Forbidden, ServiceError
from sessions_app.params import query
from sessions_app.presentation import exports
from sessions_app.selectors.access import EDITOR, OWNER, REVIEWER, VIEWER, check_access
from sessions_app.services import sessions, sync_tokens

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


AnyResponse = TypeVar("AnyResponse", bound=HttpResponseBase)  # plain, streaming or file


def download(response: AnyResponse, filename: str, *, inline: bool = False) -> AnyResponse:
    """A file response's disposition (inline or attachment, with its name), never sniffed."""
    response["Content-Disposition"] = (
        f'{"inline" if inline else "attachment"}; filename="{filename}"'
    )
    response["X-Content-Type-Options"] = "nosniff"
    return response


def bad_request(request, message: str, status: int = 400, **notice_args) -> HttpResponse:
    """An error for the person: the escaped notice for htmx, else plain text. Messages may
    quote what was sent (an export format, an entry id): never as markup."""
    if request.htmx:
        return notice(request, message, level="error", status=status, **notice_args)
    return plain_text(message, status)


def export_response(request, access, fmt: str, leaf: str | None, visible: set | None = None):
    """A session (or its branch ending at `leaf`) exported as a download; `visible` is a
    share link's entries. An export the service refuses (`ExportError`) is answered by
    the view gate."""
    export = exports.export_session(access.session, fmt, leaf, visible=visible)
    sessions.record_activity(access.session, request.user, "exported", format=fmt, leaf=leaf)
    response: HttpResponseBase
    if export.streams:  # (the pi JSONL: never the whole file in memory)
        response = StreamingHttpResponse(export.content, content_type=export.content_type)
    else:
        response = HttpResponse(export.content, content_type=export.content_type)
    inline = query(request).text("inline") == "1" and fmt != "html"
    return download(response, export.filename, inline=inline)


# --- errors and the view gate ----------------------------------------------------------


def _message(exception, default: str) -> str:
    # Our Http404 / PermissionDenied messages are written for the person (and escaped
    # by the partial); a bare exception gets the default.
    text = str(exception) if exception is not None and exception.args else ""
    return text or default


def not_found(request, exception=None) -> HttpResponse:
    """A 404: the notice for htmx (a panel shows why nothing came), else Django's page."""
    if getattr(request, "htmx", False):
        return notice(request, _message(exception, "Not found."), level="error", status=404)
    return defaults.page_not_found(request, exception)


def forbidden(request, exception=None) -> HttpResponse:
    """A 403: the notice for htmx, else Django's page."""
    if getattr(request, "htmx", False):
        message = _message(exception, "You may not do that.")
        return notice(request, message, level="error", status=403)
    return defaults.permission_denied(request, exception)


def error_response(
    request,
    exc: ServiceError | Http404 | PermissionDenied,
    *,
    as_notice: bool = False,
    target: str | None = None,
) -> HttpResponse:
    """The one mapping from a refusal to its answer. Http404 and PermissionDenied answer
    like the error handlers (the notice for htmx, else Django's page). A ServiceError is
    the error notice with its status and code for htmx callers and for the views whose
    every answer is a notice (`as_notice`); for other callers a 404 or 403 one answers
    like the handlers, any other is plain text."""
    if isinstance(exc, Http404):
        return not_found(request, exc)
    if isinstance(exc, PermissionDenied):
        return forbidden(request, exc)
    status = exc.status
    if as_notice:
        return notice(request, str(exc), level="error", status=status, code=exc.code, target=target)
    if not request.htmx and status in (403, 404):
        return (not_found if status == 404 else forbidden)(request, exc)
    return bad_request(request, str(exc), status, code=exc.code, target=target)


COMMENTER = "commenter"  # a member with any role: a share-link visitor only reads
NEEDS = (VIEWER, COMMENTER, REVIEWER, EDITOR, OWNER)


def _gate(view, methods, login: bool, need: str | None):
    view.piweb_gate = need or "none"  # (kept by the wrappers: tests find ungated views)
    if methods is not None:
        view = require_http_methods(list(methods))(view)
    return login_required(view) if login else view


def session_view(
    need: str = VIEWER,
    *,
    methods: Iterable[str] | None = ("GET",),
    notice_errors: bool = False,
    error_target: str | None = None,
):
    """The gate of every view of one session (`<session_id>` in its route): login, the
    allowed methods (None: any), the session with the caller's rights (`need`: viewer,
    commenter, reviewer, editor or owner; no role at all is a 404, too weak a role a 403), and
    every refusal mapped by `error_response`. The view is called as
    `view(request, access, **the other route values)`.

    `notice_errors`: the view's answers are notices (fetch callers read the partial), so
    its errors are too, htmx or not; `error_target`: where htmx puts an error notice.
    """
    if need not in NEEDS:
        raise ValueError(f"Unknown need {need!r}; choose one of {', '.join(NEEDS)}.")

    def decorate(view):
        @wraps(view)
        def gated(request, session_id, **kwargs):
            try:
                access = check_access(
                    request.user, session_id, VIEWER if need == COMMENTER else need
                )
                if need == COMMENTER and not access.can_comment:
                    raise Forbidden("Share-link visitors cannot comment.")
                return view(request, access, **kwargs)
            except (ServiceError, Http404, PermissionDenied) as exc:
                return error_response(request, exc, as_notice=notice_errors, target=error_target)

        return _gate(gated, methods, login=True, need=need)

    return decorate


def piweb_view(
    *,
    methods: Iterable[str] | None = ("GET",),
    login: bool = True,
    notice_errors: bool = False,
):
    """The same gate for a view that is not about one session (the lists, teams, models,
    imports) or that finds its session itself (a share link, `login=False`)."""

    def decorate(view):
        @wraps(view)
        def gated(request, *args, **kwargs):
            try:
                return view(request, *args, **kwargs)
            except (ServiceError, Http404, PermissionDenied) as exc:
                return error_response(request, exc, as_notice=notice_errors)

        return _gate(gated, methods, login, need=None)

    return decorate


# --- the token API's gate (views/sync_api.py) ----------------------------------------------


def json_error(exc: ServiceError | Http404) -> JsonResponse:
    """A refusal of the token API as JSON: {"error", "code"} (and the server's "offset"
    for a conflict), with its status."""
    if isinstance(exc, Http404):
        return JsonResponse({"error": "Not found.", "code": "not_found"}, status=404)
    body = {"error": str(exc), "code": exc.code}
    offset = getattr(exc, "offset", None)  # a sync conflict names the server's offset
    if offset is not None:
        body["offset"] = offset
    response = JsonResponse(body, status=exc.status)
    if exc.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="piweb"'
    return response


def token_view(*, methods: Iterable[str] = ("GET",)):
    """The gate of the token API: the methods, then the bearer token (401, or 429 after
    too many bad ones from the address, counted like failed logins), then the view as
    `view(request, user, ...)`. No login session is made or read, so CSRF (which guards
    cookie-authenticated requests) does not apply; the token is never logged."""

    def decorate(view):
        @wraps(view)
        def gated(request, *args, **kwargs):
            if request.method not in methods:
                return JsonResponse({"error": "Method not allowed.", "code": "method"}, status=405)
            try:
                user = sync_tokens.authenticate(
                    _bearer(request), get_client_ip_address(request) or ""
                )
                return view(request, user, *args, **kwargs)
            except (ServiceError, Http404) as exc:
                return json_error(exc)

        gated.piweb_gate = "token"
        return csrf_exempt(gated)

    return decorate


def _bearer(request) -> str:
    kind, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if kind.lower() == "bearer" else ""
