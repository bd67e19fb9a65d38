"""The one error shape: a request refused, with its message for the person, its HTTP
status and a stable machine code.

Services, selectors, presentation and the typed request values (`params.py`) raise a
`ServiceError` (usually a subclass of their own): it lives in the core, which every layer
may import; the view gate
(`responses.session_view` / `piweb_view`) turns it into the notice partial (htmx and the
chat's fetch calls) or plain text, with `status`. A view catches one itself only to show
it inside a form it renders anyway. Anything else that escapes a view is a bug and a 500.
"""

from __future__ import annotations


class ServiceError(Exception):
    """A refusal the person can act on; `str(exc)` is safe to show (never markup)."""

    status = 400
    code = "invalid"

    def __init__(self, message: str, status: int | None = None, code: str | None = None):
        if status is not None and not isinstance(status, int):
            raise TypeError(f"ServiceError status must be an HTTP status, not {status!r}.")
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code


class NotFound(ServiceError):
    """What was asked for does not exist, or not for this caller: a 404, so that the ids of
    sessions and entries one may not see never leak."""

    status = 404
    code = "not_found"


class Forbidden(ServiceError):
    """The caller's role is too weak for this: a 403."""

    status = 403
    code = "forbidden"
