"""One summary call: the configured model through the openai SDK, with retries.

The request dicts come from the pure core (`core/summaries.py` builders:
`{"system", "messages", "max_tokens"}`); this module only sends them. Provider errors
that are worth another try (429, 408, 5xx, timeouts, dropped connections) are retried
as the one retry policy says (`services.llm.retry_policy()`, shared with the agent run);
anything else fails at once with a `SummaryError` whose text is safe to show (no keys,
no request bodies).
"""

import logging
import os
import threading
import time
from dataclasses import dataclass

import openai

from sessions_app.services.llm import ModelProfile, retry_policy

log = logging.getLogger(__name__)


class SummaryError(Exception):
    """The model could not produce a summary. `str(exc)` is fit for the job panel."""


@dataclass
class Completion:
    text: str
    model_seconds: float
    calls: int


_clients: dict[tuple, openai.OpenAI] = {}
_clients_lock = threading.Lock()


def _client(profile: ModelProfile) -> openai.OpenAI:
    """One client per endpoint per process: building one loads the CA bundle (~0.2 s)."""
    key = (os.getpid(), profile.base_url, profile.api_key, profile.timeout)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = openai.OpenAI(
                base_url=profile.base_url,
                api_key=profile.api_key or "not-needed",
                timeout=profile.timeout,
                max_retries=0,  # we retry ourselves, visibly and with a cap
            )
        return client


def _describe(exc: Exception) -> str:
    if isinstance(exc, openai.APIStatusError):
        message = ""
        body = exc.body if isinstance(exc.body, dict) else None
        if body:
            message = str(body.get("message") or (body.get("error") or {}).get("message") or "")
        return f"provider answered {exc.status_code}: {message or exc.__class__.__name__}"[:500]
    if isinstance(exc, openai.APITimeoutError):
        return "provider timed out"
    if isinstance(exc, openai.APIConnectionError):
        return "could not reach the provider (connection failed or dropped)"
    return f"{exc.__class__.__name__}: {exc}"[:500]


def complete(profile: ModelProfile, request: dict, *, on_retry=None) -> Completion:
    """Send one summary request; return the text. Retries transient provider errors.

    `on_retry(attempt, delay, message)` is called before each wait (for job progress).
    """
    policy = retry_policy()
    client = _client(profile)
    messages = [{"role": "system", "content": request["system"]}, *request["messages"]]
    max_tokens = max(1, min(int(request["max_tokens"]), int(profile.max_output)))
    spent = 0.0
    calls = 0
    attempt = 0
    while True:
        started = time.monotonic()
        calls += 1
        try:
            response = client.chat.completions.create(
                model=profile.model, messages=messages, max_tokens=max_tokens, stream=False
            )
        except Exception as exc:  # classified below; never leaks the key
            spent += time.monotonic() - started
            delay = policy.delay(attempt, exc)
            if delay is None:
                suffix = f" (after {calls} calls)" if calls > 1 else ""
                raise SummaryError(_describe(exc) + suffix) from exc
            log.warning(
                "summary call failed (%s); retry %d in %.1fs", _describe(exc), attempt + 1, delay
            )
            if on_retry is not None:
                on_retry(attempt + 1, delay, _describe(exc))
            time.sleep(delay)
            attempt += 1
            continue
        spent += time.monotonic() - started
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content or "") if choice else ""
        if not text.strip():
            raise SummaryError("the model returned an empty summary")
        return Completion(text=text, model_seconds=spent, calls=calls)
