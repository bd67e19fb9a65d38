"""Typed request parameters: every view reads its input through `query(request)` (the
query string) or `form(request)` (the POST body), never `request.GET/POST.get`.

A value that cannot be what the view needs is a `ServiceError` (400) whose message names
the field; the view gate (`responses.session_view` / `piweb_view`) answers it like any
other refusal. Missing values get the view's default.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from typing import overload

from sessions_app.core.errors import ServiceError

TRUE_WORDS = ("1", "true", "on", "yes")


class Params:
    """One request's values (a QueryDict), read by type."""

    def __init__(self, data):
        self.data = data

    def text(self, name: str, default: str = "", *, limit: int | None = None) -> str:
        """The value as sent (the default when missing), cut at `limit` characters."""
        value = self.data.get(name, default)
        return value[:limit] if limit is not None else value

    def stripped(self, name: str, default: str = "", *, limit: int | None = None) -> str:
        """The value without surrounding blanks, cut at `limit` characters."""
        value = self.data.get(name, default).strip()
        return value[:limit] if limit is not None else value

    def optional(self, name: str, *, limit: int | None = None) -> str | None:
        """The value, or None when it is missing or empty."""
        return self.text(name, limit=limit) or None

    def flag(self, name: str) -> bool:
        """A checkbox or switch: on for 1, true, on or yes (any case)."""
        return self.data.get(name, "").lower() in TRUE_WORDS

    def present(self, name: str) -> bool:
        """Whether the form sent a non-empty value (a button or a checkbox)."""
        return bool(self.data.get(name))

    # With an int default the answer is always an int; without one it may be None.
    @overload
    def integer(
        self, name: str, default: int, *, low: int | None = None, high: int | None = None
    ) -> int: ...
    @overload
    def integer(
        self, name: str, default: None = None, *, low: int | None = None, high: int | None = None
    ) -> int | None: ...
    def integer(
        self,
        name: str,
        default: int | None = None,
        *,
        low: int | None = None,
        high: int | None = None,
    ) -> int | None:
        """A whole number (the default when missing or empty), kept within [low, high]."""
        raw = self.data.get(name, "")
        if raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ServiceError(
                f"{name}: expected a whole number, got {raw[:40]!r}.", 400, "bad_parameter"
            ) from None
        if low is not None:
            value = max(low, value)
        if high is not None:
            value = min(high, value)
        return value

    def choice(self, name: str, choices: Iterable[str], default: str, message: str = "") -> str:
        """One of `choices` (the default when missing or empty)."""
        value = self.data.get(name, "") or default
        if value not in choices:
            raise ServiceError(
                message or f"{name}: unknown value {value[:40]!r}.", 400, "bad_parameter"
            )
        return value


def query(request) -> Params:
    return Params(request.GET)


def form(request) -> Params:
    return Params(request.POST)


class JsonBody:
    """A JSON object sent as a request's body (the token API), read by type: a missing
    or mistyped field is a `ServiceError` naming it."""

    def __init__(self, data: dict):
        self.data = data

    def _typed(self, name: str, kind: type):
        value = self.data.get(name)
        if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
            raise ServiceError(f'"{name}" must be a {kind.__name__}.', 400, "bad_parameter")
        return value

    def text(self, name: str) -> str:
        return self._typed(name, str)

    def integer(self, name: str) -> int:
        return self._typed(name, int)

    def flag(self, name: str) -> bool:
        return name in self.data and self._typed(name, bool)

    def data_bytes(self, name: str = "data") -> bytes:
        """Bytes sent as text ("encoding": "utf-8", the default) or base64."""
        value, encoding = self.data.get(name, ""), self.data.get("encoding", "utf-8")
        if not isinstance(value, str):
            raise ServiceError(f'"{name}" must be a string.', 400, "bad_parameter")
        if encoding == "utf-8":
            return value.encode("utf-8", "surrogatepass")
        if encoding != "base64":
            raise ServiceError('"encoding" is "utf-8" or "base64".', 400, "bad_parameter")
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error:
            raise ServiceError(f'"{name}" is not valid base64.', 400, "bad_parameter") from None


def raw_body(request, limit: int) -> bytes:
    """The request's body as bytes, refused (413) past `limit` bytes; read from the
    stream, so Django's in-memory limit for form bodies does not apply."""
    raw = request.read(limit + 1)
    if len(raw) > limit:
        raise ServiceError(
            f"A request body is at most {limit} bytes; send fewer lines at a time.",
            413,
            "too_large",
        )
    return raw


def json_body(request, limit: int) -> JsonBody:
    """The request's body as a JSON object, refused (413) past `limit` bytes; read from
    the stream, so Django's in-memory limit for form bodies does not apply."""
    raw = raw_body(request, limit)
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ServiceError("The body must be a JSON object.", 400, "bad_parameter")
    return JsonBody(value)
