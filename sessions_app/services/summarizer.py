"""One summary call: the session's model through its API module, streamed, with retries.

The request dicts come from the pure core (`context/summaries.py` builders:
`{"system", "messages", "max_tokens"}`); this module sends them as pi 0.80.2 sends a
summary request: streamed like an agent turn, without tools, with the request's budget
as max tokens (capped by the model's max tokens) and, for a reasoning model, the
session's thinking level (`request["thinking_level"]`, if the caller gives one). Provider
errors that are worth another try (429, 408, 5xx, timeouts, dropped connections) are
retried as the one retry policy says (`selectors.llm.resolution.retry_policy()`, shared with the
agent run); anything else fails at once with a `SummaryError` whose text is safe to
show (no keys, no request bodies).

Every call that answers is priced as the agent run's turns are (pi's calculateCost with
the prices of the model called), so a summary entry carries what it cost in `usage`.
"""

import logging
import time
from dataclasses import dataclass

from sessions_app.agent.providers import stream_for
from sessions_app.agent.providers.base import ModelRequest, ProviderError, ResolvedModel
from sessions_app.agent.retry import with_retries
from sessions_app.core.costs import calculate_cost
from sessions_app.core.errors import ServiceError
from sessions_app.selectors.llm.catalog import ModelProfile
from sessions_app.selectors.llm.resolution import retry_policy

log = logging.getLogger(__name__)


class SummaryError(ServiceError):
    """The model could not produce a summary. `str(exc)` is fit for the job panel."""

    status = 502
    code = "summary"


@dataclass
class Completion:
    text: str
    model_seconds: float
    calls: int
    usage: dict | None = None  # pi's usage shape, priced; None when the API gave none


def _describe(exc: ProviderError) -> str:
    if exc.status is not None:
        return f"provider answered {exc}"[:500]
    return str(exc)[:500]


def _messages(messages: list[dict]) -> list[dict]:
    """The core's summary messages ({role, content}) as pi LLM messages."""
    out = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out.append({**message, "content": content, "timestamp": int(time.time() * 1000)})
    return out


def complete(profile: ModelProfile | ResolvedModel, request: dict, *, on_retry=None) -> Completion:
    """Send one summary request; return the text. Retries transient provider errors.

    `on_retry(attempt, delay, message)` is called before each wait (for job progress).
    """
    resolved = profile.resolved() if isinstance(profile, ModelProfile) else profile
    budget = int(request["max_tokens"])
    if resolved.max_tokens > 0:
        budget = min(budget, resolved.max_tokens)
    model_request = ModelRequest(
        system_prompt=request["system"],
        messages=_messages(request["messages"]),
        max_tokens=max(1, budget),
        thinking_level=request.get("thinking_level") or "off",
    )
    call = stream_for(resolved.api)
    spent = 0.0
    calls = 0

    def once() -> dict:
        nonlocal spent, calls
        started = time.monotonic()
        calls += 1
        try:
            return call(resolved, model_request, abort=None, on_delta=None)
        finally:
            spent += time.monotonic() - started

    def announce(attempt: int, delay: float, exc: ProviderError) -> None:
        log.warning("summary call failed (%s); retry %d in %.1fs", _describe(exc), attempt, delay)
        if on_retry is not None:
            on_retry(attempt, delay, _describe(exc))

    try:
        message = with_retries(once, retry_policy(), on_retry=announce)
    except ProviderError as exc:  # classified by the API module; never holds the key
        suffix = f" (after {calls} calls)" if calls > 1 else ""
        raise SummaryError(_describe(exc) + suffix) from exc
    text = "\n".join(b["text"] for b in message["content"] if b.get("type") == "text")
    if not text.strip():
        raise SummaryError("the model returned an empty summary")
    usage = message.get("usage")
    if isinstance(usage, dict):
        calculate_cost(resolved.model, usage)
    else:
        usage = None
    return Completion(text=text, model_seconds=spent, calls=calls, usage=usage)
