"""The one retry policy for model calls: the agent's streamed turns and the summaries.

``selectors.llm.resolution.retry_policy()`` builds it from the settings (``PIWEB_LLM_RETRIES``,
``PIWEB_LLM_RETRY_BASE_DELAY``, ``PIWEB_LLM_RETRY_MAX_DELAY``); both callers ask
:meth:`RetryPolicy.delay` whether to try again and how long to wait first. Pure of Django.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import openai

from .providers.base import ProviderError

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


def retryable(exc: BaseException, *, streaming: bool = False) -> bool:
    """Worth another try: rate limits, overload and server errors; for a plain call also a
    timeout or a dropped connection. A stream that stalled or broke is reported at once
    instead (as pi does: the user sees it and may send again).

    A :class:`ProviderError` (any of the four model APIs) is retried when its kind is
    ``retryable``: with a status (429, 5xx, …) always, without one (a timeout or a
    dropped connection) only for a plain call. ``overflow``, ``auth`` and ``other`` never.
    """
    if isinstance(exc, ProviderError):
        if exc.kind != "retryable":
            return False
        return exc.status is not None or not streaming
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500
    if streaming:
        return False
    return isinstance(exc, openai.APITimeoutError | openai.APIConnectionError)


def retry_after(exc: BaseException) -> float | None:
    """The provider's Retry-After header, in seconds, if it sent one."""
    if isinstance(exc, ProviderError):
        return exc.retry_after
    response = getattr(exc, "response", None)
    if response is None:
        return None
    try:
        value = response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 4
    base_delay: float = 1.0
    max_delay: float = 30.0

    def delay(self, attempt: int, exc: BaseException, *, streaming: bool = False) -> float | None:
        """Seconds to wait before retry number ``attempt + 1``, or None: give up now.

        Capped exponential backoff (``base_delay * 2**attempt``, at most ``max_delay``),
        never shorter than the provider's Retry-After (within the cap), plus up to 10 %
        jitter so that many workers do not retry in step.
        """
        if attempt >= self.retries or not retryable(exc, streaming=streaming):
            return None
        delay = min(self.max_delay, self.base_delay * (2**attempt))
        asked = retry_after(exc)
        if asked is not None:
            delay = min(self.max_delay, max(delay, asked))
        return delay * (1 + random.random() * 0.1)
