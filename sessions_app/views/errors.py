"""The 403 and 404 pages (piweb/urls.py's handler403 and handler404): an htmx request
gets the notice partial with the real status, so a panel shows why nothing came; any
other request gets Django's own page."""

from django.views import defaults

from sessions_app.responses import notice


def _message(exception, default: str) -> str:
    # Our Http404 / PermissionDenied messages are written for the person (and escaped
    # by the partial); a bare exception gets the default.
    text = str(exception) if exception is not None and exception.args else ""
    return text or default


def not_found(request, exception):
    if getattr(request, "htmx", False):
        return notice(request, _message(exception, "Not found."), level="error", status=404)
    return defaults.page_not_found(request, exception)


def forbidden(request, exception):
    if getattr(request, "htmx", False):
        return notice(
            request, _message(exception, "You may not do that."), level="error", status=403
        )
    return defaults.permission_denied(request, exception)
