"""Errors of the ``openai`` and ``anthropic`` SDKs (same class names) as ProviderError."""

from __future__ import annotations

from typing import Any

from .base import ProviderError
from .errors import body_code, body_message, classify, header_retry_after


def from_sdk(exc: BaseException, provider: str, sdk: Any) -> ProviderError:
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, sdk.APIStatusError):
        body = exc.body
        message = body_message(body) or exc.message or exc.__class__.__name__
        if exc.status_code == 200:  # an error event inside a stream that had begun
            return classify(provider, message, None, code=body_code(body))
        return classify(
            provider,
            f"{exc.status_code} {message}",
            exc.status_code,
            retry_after=header_retry_after(exc.response),
            code=body_code(body),
        )
    if isinstance(exc, sdk.APITimeoutError):
        return classify(provider, "Request timed out.", None, connection=True)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__
        text = f"Connection error: {cause}" if cause else "Connection error."
        return classify(provider, text, None, connection=True)
    if isinstance(exc, sdk.APIError):  # an error event inside the stream
        body = getattr(exc, "body", None)
        message = body_message(body) or str(exc)
        return classify(provider, message, None, code=body_code(body))
    return ProviderError(f"{exc.__class__.__name__}: {exc}", kind="other")
