"""selectors/llm/resolution.py: one retry policy. The agent run and the summarizer obey the
same three settings (PIWEB_LLM_RETRIES, PIWEB_LLM_RETRY_BASE_DELAY,
PIWEB_LLM_RETRY_MAX_DELAY), against the scripted OpenAI-compatible server through the real
openai SDK, in this process."""

import time

import pytest

from sessions_app.selectors import paths
from sessions_app.selectors.llm.catalog import (
    resolve_profile,
)
from sessions_app.services import chat, jobs, sessions, summarizer
from tests.support.scripted_llm import error, text

pytestmark = pytest.mark.django_db(transaction=True)


REQUEST = {
    "system": "Summarize.",
    "messages": [{"role": "user", "content": "hi"}],
    "max_tokens": 50,
}


@pytest.fixture
def owner(make_user):
    return make_user("retry-owner")  # (the `workspace` fixture is made in their folder)


@pytest.fixture
def session(owner, workspace, redis_ready, monkeypatch):
    """A session on the scripted model whose runs happen here: their tasks go to a queue
    no worker consumes (a worker from another module must not claim them first)."""
    from piweb.celery import app

    monkeypatch.setitem(app.conf, "task_default_queue", "q-retry-tests-unconsumed")
    return sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")


def agent_calls(session, llm_server) -> tuple[int, float]:
    before = len(llm_server.requests)
    started = time.monotonic()
    job = chat.send_message(session, session.owner, "hello")
    jobs.run_job(str(job.pk))
    session.refresh_from_db()
    return len(llm_server.requests) - before, time.monotonic() - started


def summary_calls(llm_server) -> tuple[int, float, str]:
    before = len(llm_server.requests)
    started = time.monotonic()
    try:
        summarizer.complete(resolve_profile("scripted"), REQUEST)
        outcome = "ok"
    except summarizer.SummaryError as exc:
        outcome = str(exc)
    return len(llm_server.requests) - before, time.monotonic() - started, outcome


@pytest.mark.parametrize("retries", [0, 2])
def test_both_callers_obey_the_same_retry_settings(session, llm, settings, retries):
    settings.PIWEB_LLM_RETRIES = retries
    settings.PIWEB_LLM_RETRY_BASE_DELAY = 0.3
    settings.PIWEB_LLM_RETRY_MAX_DELAY = 0.4
    waits = sum(min(0.4, 0.3 * 2**n) for n in range(retries))  # 0.3 + 0.4

    llm.push(*[error(503, "overloaded")] * (retries + 2))
    calls, took = agent_calls(session, llm)
    assert calls == retries + 1 and took >= waits
    assert paths.load_path(session)[-1]["message"]["errorMessage"] == "503 overloaded"

    llm.reset()
    llm.push(*[error(503, "overloaded")] * (retries + 2))
    calls, took, outcome = summary_calls(llm)
    assert calls == retries + 1 and took >= waits
    assert "503" in outcome

    # Within the budget both get through.
    llm.reset()
    llm.push(*[error(429, "slow down")] * retries, text("fine"))
    assert agent_calls(session, llm)[0] == retries + 1
    llm.push(*[error(429, "slow down")] * retries, text("fine"))
    assert summary_calls(llm)[::2] == (retries + 1, "ok")
