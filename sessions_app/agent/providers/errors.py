"""What went wrong, in pi's terms: context-overflow texts (pi-ai 0.80.2's
``utils/overflow.js``), the retryable statuses, and a provider's error classified as a
:class:`~.base.ProviderError` (overflow, auth, retryable or other) with its Retry-After.
"""

from __future__ import annotations

import re
from typing import Any

from .base import ProviderError

OVERFLOW_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"prompt is too long",
        r"request_too_large",
        r"input is too long for requested model",
        r"exceeds the context window",
        r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
        r"input token count.*exceeds the maximum",
        r"maximum prompt length is \d+",
        r"reduce the length of the messages",
        r"maximum context length is \d+ tokens",
        r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
        r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
        r"exceeds the limit of \d+",
        r"exceeds the available context size",
        r"greater than the context length",
        r"context window exceeds limit",
        r"exceeded model token limit",
        r"too large for model with \d+ maximum context length",
        r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
        r"model_context_window_exceeded",
        r"prompt too long; exceeded (?:max )?context length",
        r"context[_ ]length[_ ]exceeded",
        r"too many tokens",
        r"token limit exceeded",
        r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",
    )
]


NON_OVERFLOW_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (r"^(Throttling error|Service unavailable):", r"rate limit", r"too many requests")
]


RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


def is_overflow_text(text: str) -> bool:
    """pi's isContextOverflow on an error message."""
    if not text or any(p.search(text) for p in NON_OVERFLOW_PATTERNS):
        return False
    return any(p.search(text) for p in OVERFLOW_PATTERNS)


def classify(
    provider: str,
    text: str,
    status: int | None,
    *,
    connection: bool = False,
    retry_after: float | None = None,
    code: str | None = None,
) -> ProviderError:
    """A ProviderError whose kind the retry policy and the loop act on."""
    if code == "context_length_exceeded" or is_overflow_text(text):
        return ProviderError(text, kind="overflow", status=status)
    if status in (401, 403):
        return ProviderError(
            f"Authentication with {provider} failed ({text}). Check the API key for "
            f"{provider} on the Models page or in the server's configuration.",
            kind="auth",
            status=status,
        )
    if connection or (status is not None and (status in RETRYABLE_STATUS or status >= 500)):
        return ProviderError(text, kind="retryable", status=status, retry_after=retry_after)
    return ProviderError(text, kind="other", status=status)


def header_retry_after(response: Any) -> float | None:
    if response is None:
        return None
    try:
        value = response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def body_message(body: Any) -> str | None:
    """The provider's own error message out of a parsed error body."""
    if isinstance(body, list) and body:
        body = body[0]
    if not isinstance(body, dict):
        return None
    err = body.get("error", body)
    if isinstance(err, dict):
        return err.get("message") or None
    if isinstance(err, str):
        return err
    return None


def body_code(body: Any) -> str | None:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            code = err.get("code") or err.get("type")
            return code if isinstance(code, str) else None
    return None
