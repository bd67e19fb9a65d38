"""The one retry policy of model calls (agent/retry.py), on real openai exceptions."""

import httpx
import openai
import pytest

from sessions_app.agent.retry import RetryPolicy, retryable

REQUEST = httpx.Request("POST", "http://model.invalid/v1/chat/completions")


def status_error(code: int, headers: dict | None = None) -> openai.APIStatusError:
    response = httpx.Response(code, headers=headers or {}, request=REQUEST)
    return openai.APIStatusError("scripted", response=response, body=None)


@pytest.mark.parametrize("code", [408, 409, 425, 429, 500, 502, 503, 504, 529, 599])
def test_overload_and_server_errors_are_retried(code):
    assert retryable(status_error(code)) and retryable(status_error(code), streaming=True)


@pytest.mark.parametrize("code", [400, 401, 403, 404, 413, 422])
def test_client_errors_are_not(code):
    assert not retryable(status_error(code))


def test_a_timeout_or_dropped_connection_is_retried_only_for_a_plain_call():
    timeout = openai.APITimeoutError(request=REQUEST)
    dropped = openai.APIConnectionError(request=REQUEST)
    assert retryable(timeout) and retryable(dropped)
    assert not retryable(timeout, streaming=True) and not retryable(dropped, streaming=True)
    assert not retryable(ValueError("not a provider error"))


def test_capped_exponential_backoff_with_a_little_jitter():
    policy = RetryPolicy(retries=5, base_delay=1.0, max_delay=5.0)
    exc = status_error(503)
    delays = [policy.delay(n, exc) for n in range(5)]
    for delay, expected in zip(delays, [1, 2, 4, 5, 5], strict=True):
        assert expected <= delay <= expected * 1.1
    assert policy.delay(5, exc) is None  # out of retries


def test_retry_after_lengthens_the_wait_within_the_cap():
    policy = RetryPolicy(retries=3, base_delay=0.5, max_delay=10.0)
    assert 7 <= policy.delay(0, status_error(429, {"retry-after": "7"})) <= 7.7
    assert 10 <= policy.delay(0, status_error(429, {"retry-after": "600"})) <= 11
    assert 0.5 <= policy.delay(0, status_error(429, {"retry-after": "soon"})) <= 0.55


def test_no_retry_for_what_is_not_retryable_even_with_retries_left():
    assert RetryPolicy(retries=9).delay(0, status_error(401)) is None
