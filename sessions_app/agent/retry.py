"""The one retry policy for model calls: the agent's streamed turns and the summaries.

``selectors.llm.resolution.retry_policy()`` builds it from the settings (``PIWEB_LLM_RETRIES``,
``PIWEB_LLM_RETRY_BASE_DELAY``, ``PIWEB_LLM_RETRY_MAX_DELAY``), and
:func:`with_retries` is the one loop both callers run a model call in (the agent's turn in
``agent/loop.py``, the summary in ``services/summarizer.py``): it asks
:meth:`RetryPolicy.delay` whether to try again and how long to wait first. Pure of Django.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

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
        delay: float = min(self.max_delay, self.base_delay * (2**attempt))
        asked = retry_after(exc)
        if asked is not None:
            delay = min(self.max_delay, max(delay, asked))
        return delay * (1 + random.random() * 0.1)


T = TypeVar("T")


class RetryWaitInterrupted(Exception):
    """The wait before another try was cut short (the run was stopped)."""


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return False


def with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    *,
    streaming: bool = False,
    on_retry: Callable[[int, float, ProviderError], None] | None = None,
    wait: Callable[[float], bool] = _sleep,
) -> T:
    """``call()``, tried again on a :class:`ProviderError` while the policy says so; a
    call that had already received part of its answer is never repeated. The last error
    is raised. ``on_retry(attempt, delay, error)`` runs before each wait; ``wait(delay)``
    returns True when it was interrupted, which raises :class:`RetryWaitInterrupted`."""
    attempt = 0
    while True:
        try:
            return call()
        except ProviderError as exc:
            delay = None if exc.received else policy.delay(attempt, exc, streaming=streaming)
            if delay is None:
                raise
            attempt += 1
            if on_retry is not None:
                on_retry(attempt, delay, exc)
            if wait(delay):
                raise RetryWaitInterrupted() from exc
