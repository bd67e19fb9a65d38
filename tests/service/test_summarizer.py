"""services/summarizer.py: one summary call to the scripted OpenAI-compatible model through
the real SDK: the request as pi sends it (no tools, the budget capped by the model), the
text back, transient errors retried and counted, anything else refused with a safe text."""

import pytest

from sessions_app.selectors.llm.catalog import resolve_profile
from sessions_app.services import summarizer
from sessions_app.services.summarizer import SummaryError
from tests.support.pi_costs import pi_priced
from tests.support.scripted_llm import error, text, user_text

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_retries(settings):
    settings.PIWEB_LLM_RETRIES = 2
    settings.PIWEB_LLM_RETRY_BASE_DELAY = 0.01
    settings.PIWEB_LLM_RETRY_MAX_DELAY = 0.02


def request(max_tokens=900):
    return {
        "system": "Summarize the conversation.",
        "messages": [{"role": "user", "content": "<conversation>hi</conversation>"}],
        "max_tokens": max_tokens,
    }


def test_a_summary_is_the_answers_text_and_the_request_has_no_tools(llm):
    llm.push(text("## Goal\nShip it."))
    done = summarizer.complete(resolve_profile("scripted"), request())
    assert (done.text, done.calls) == ("## Goal\nShip it.", 1)
    (body,) = llm.requests
    assert "tools" not in body and body["stream"] is True
    assert body["messages"][0]["role"] in ("system", "developer")
    assert body["messages"][0]["content"] == "Summarize the conversation."
    assert user_text(body["messages"][-1]) == "<conversation>hi</conversation>"


def test_the_budget_is_capped_by_the_models_max_tokens(llm):
    llm.push(text("short"), text("shorter"))
    summarizer.complete(resolve_profile("scripted"), request(max_tokens=100_000))
    summarizer.complete(resolve_profile("scripted"), request(max_tokens=300))
    budgets = [b.get("max_completion_tokens", b.get("max_tokens")) for b in llm.requests]
    assert budgets == [4096, 300]  # the scripted profile's max_output is 4096


def test_transient_errors_are_retried_and_reported(llm):
    llm.push(error(503, "busy"), error(429, "slow down"), text("done at last"))
    retries = []
    done = summarizer.complete(
        resolve_profile("scripted"), request(), on_retry=lambda *a: retries.append(a)
    )
    assert done.text == "done at last" and done.calls == 3
    assert [attempt for attempt, _delay, _why in retries] == [1, 2]


def test_other_errors_and_empty_answers_fail_with_a_safe_message(llm):
    llm.push(error(400, "bad request body"))
    with pytest.raises(SummaryError, match="bad request body") as refused:
        summarizer.complete(resolve_profile("scripted"), request())
    assert "test-key-not-secret" not in str(refused.value)
    assert len(llm.requests) == 1  # not retried
    llm.push(text(""))
    with pytest.raises(SummaryError, match="empty summary"):
        summarizer.complete(resolve_profile("scripted"), request())
    llm.push(error(503), error(503), error(503))
    with pytest.raises(SummaryError, match=r"\(after 3 calls\)"):
        summarizer.complete(resolve_profile("scripted"), request())


def test_a_summary_call_is_priced_as_pi_prices_it(llm):
    profile = resolve_profile("scripted-cloud")
    wire = {
        "prompt_tokens": 5000,
        "completion_tokens": 700,
        "total_tokens": 5700,
        "prompt_tokens_details": {"cached_tokens": 3000},
    }
    llm.push(text("## Goal\nPriced.", usage=wire))
    done = summarizer.complete(profile, request())
    usage = done.usage
    assert (usage["input"], usage["cacheRead"], usage["output"]) == (2000, 3000, 700)
    (theirs,) = pi_priced(profile.resolved().model, [usage])["priced"]
    for key in ("input", "output", "cacheRead", "cacheWrite", "total"):
        assert usage["cost"][key] == pytest.approx(theirs["cost"][key], rel=1e-12), key
    # $3/M in, $15/M out, $0.30/M cache read (tests/conftest.py's scripted-cloud)
    assert usage["cost"]["total"] == pytest.approx((2000 * 3 + 700 * 15 + 3000 * 0.3) / 1e6)
