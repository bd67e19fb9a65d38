"""The 403 and 404 pages (piweb/urls.py's handler403 and handler404), for what escapes
the view gate (a route that matched nothing, middleware): the same answers as the gate's,
`responses.not_found` and `responses.forbidden`."""

from sessions_app.responses import forbidden as _forbidden
from sessions_app.responses import not_found as _not_found


def not_found(request, exception):
    return _not_found(request, exception)


def forbidden(request, exception):
    return _forbidden(request, exception)
