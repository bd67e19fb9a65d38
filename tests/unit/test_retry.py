"""The one retry policy of model calls (agent/retry.py), on real openai exceptions."""

import httpx
import openai
import pytest

from sessions_app.agent.providers.base import ProviderError
from sessions_app.agent.retry import RetryPolicy, RetryWaitInterrupted, retryable, with_retries

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


# The one loop both callers run a model call in (with_retries).

FAST = RetryPolicy(retries=2, base_delay=0.01, max_delay=0.02)


def scripted(*outcomes):
    """A call that raises or returns each outcome in turn, counting its calls."""
    calls = []

    def call():
        outcome = outcomes[len(calls)]
        calls.append(outcome)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return call, calls


def overloaded(**kwargs):
    return ProviderError("503 overloaded", kind="retryable", status=503, **kwargs)


def test_the_loop_tries_again_within_the_budget_and_reports_each_retry():
    call, calls = scripted(overloaded(), overloaded(), "answer")
    seen, waits = [], []
    result = with_retries(
        call,
        FAST,
        on_retry=lambda attempt, delay, exc: seen.append((attempt, str(exc))),
        wait=lambda delay: waits.append(delay) and False,
    )
    assert result == "answer" and len(calls) == 3
    assert seen == [(1, "503 overloaded"), (2, "503 overloaded")]
    assert len(waits) == 2 and all(0.01 <= w <= 0.022 for w in waits)


def test_the_last_error_is_raised_when_the_budget_is_spent():
    call, calls = scripted(overloaded(), overloaded(), overloaded(), "never")
    with pytest.raises(ProviderError, match="503"):
        with_retries(call, FAST, wait=lambda delay: False)
    assert len(calls) == 3  # the first call and two retries


def test_a_call_that_received_part_of_its_answer_or_is_not_retryable_is_not_repeated():
    for error in (overloaded(received=True), ProviderError("bad key", kind="auth", status=401)):
        call, calls = scripted(error, "never")
        with pytest.raises(ProviderError):
            with_retries(call, FAST, wait=lambda delay: False)
        assert len(calls) == 1


def test_an_interrupted_wait_stops_the_loop():
    call, calls = scripted(overloaded(), "never")
    with pytest.raises(RetryWaitInterrupted):
        with_retries(call, FAST, wait=lambda delay: True)
    assert len(calls) == 1
