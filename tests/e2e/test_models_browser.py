"""Models in a real browser: add an own key, test a model with it, choose a default; in
the chat pick a model and a thinking level, then a run whose cost shows in the session
header and on the usage dashboard. The scripted OpenAI-compatible server stands in for
the provider; `scripted-cloud/scripted-priced` (tests/conftest.py) has a price."""

import pytest
from playwright.sync_api import expect

from sessions_app.models import ModelPreference, ProviderKey
from sessions_app.selectors import paths
from sessions_app.services import sessions
from tests.support.agent_runs import messages, new_session, wait_run
from tests.support.scripted_llm import text

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

USER_KEY = "sk-user-browser-key-0001"


def test_add_a_key_test_the_model_and_choose_a_default(page_for, llm, make_user):
    user = make_user()
    page = page_for(user)
    page.goto("/models/")
    row = page.locator('#models-providers-table tr[data-provider="scripted-cloud"]')
    expect(row.locator(".key-source")).to_contain_text("server environment")
    page.fill("#models-key-provider", "scripted-cloud")
    page.fill("#models-key-value", USER_KEY)
    page.click("#models-key button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Saved your key for scripted-cloud")
    expect(row.locator(".key-source")).to_contain_text("your key (…0001)")
    assert USER_KEY not in page.content()
    assert ProviderKey.objects.filter(user=user, provider="scripted-cloud").exists()

    # One tiny request with the user's key (the server sees it, the page never does).
    llm.push(text("ok"))
    page.select_option("#models-test-model", "scripted-cloud/scripted-priced")
    page.click("#models-test button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Test passed: scripted-cloud/scripted-priced")
    expect(page.locator(".messages")).to_contain_text("key: your key")
    assert llm.authorizations[-1] == f"Bearer {USER_KEY}"
    assert llm.requests[-1]["model"] == "scripted-priced"
    assert USER_KEY not in page.content()

    # A failing test says why, without the key.
    llm.push(text("unused"))
    llm.reset()
    page.click("#models-test button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Test failed")
    assert USER_KEY not in page.content()

    page.select_option("#models-default-model", "scripted-cloud/scripted-priced")
    page.select_option("#models-default-thinking", "high")
    page.click("#models-default button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Saved your default")
    pref = ModelPreference.objects.get(user=user)
    assert (pref.provider, pref.model_id, pref.thinking_level) == (
        "scripted-cloud",
        "scripted-priced",
        "high",
    )
    expect(page.locator("#models-default-model")).to_have_value("scripted-cloud/scripted-priced")

    page.click('#models-providers-table tr[data-provider="scripted-cloud"] button')
    expect(page.locator(".messages")).to_contain_text("Removed your key for scripted-cloud")
    assert not ProviderKey.objects.filter(user=user).exists()


@pytest.mark.worker
def test_pick_model_and_thinking_then_a_priced_run_shows_its_cost(
    worker, page_for, llm, make_user, workspace
):
    user = make_user()
    session = new_session(user, workspace)
    sessions.rename_session(session, "models browser test", actor=user)
    page = page_for(user)
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    # The scripted model does not reason: no thinking control.
    expect(page.locator("#chat-thinking-form")).to_be_hidden()
    option = page.locator('#chat-model-select option[value="scripted-cloud/scripted-priced"]')
    expect(option).to_contain_text("200k")
    expect(option).to_contain_text("$3 in / $15 out per M")
    page.select_option("#chat-model-select", "scripted-cloud/scripted-priced")
    page.click(".chat-model-form button[type=submit]")
    expect(page.locator("#chat-notice")).to_contain_text("Model: scripted-cloud/scripted-priced")
    expect(page.locator("#chat-model")).to_have_text("scripted-cloud/scripted-priced")
    expect(page.locator("#chat-thinking-form")).to_be_visible()
    page.select_option("#chat-thinking-select", "high")
    page.click("#chat-thinking-form button[type=submit]")
    expect(page.locator("#chat-notice")).to_contain_text("Thinking: high")
    session.refresh_from_db()
    path = paths.load_path(session)
    assert path[-2] == {
        **path[-2],
        "type": "model_change",
        "provider": "scripted-cloud",
        "modelId": "scripted-priced",
    }
    assert path[-1]["type"] == "thinking_level_change" and path[-1]["thinkingLevel"] == "high"

    llm.push(
        text(
            "Priced answer.",
            usage={"prompt_tokens": 100_000, "completion_tokens": 2000, "total_tokens": 102_000},
        )
    )
    page.fill("#chat-input", "what does it cost?")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-transcript")).to_contain_text("Priced answer.", timeout=30000)
    job = wait_run(session)
    assert job.status == "done" and job.params["key_source"] == "env"
    reply = messages(session)[-1]
    assert reply["provider"] == "scripted-cloud" and reply["model"] == "scripted-priced"
    assert reply["usage"]["cost"]["total"] == pytest.approx(0.33)
    assert llm.requests[-1]["model"] == "scripted-priced"

    page.reload()
    expect(page.locator("#usage-head .usage-cost")).to_have_text("$0.3300")
    expect(page.locator("#usage-head .usage-models")).to_contain_text(
        "scripted-cloud/scripted-priced"
    )
    page.goto("/usage/")
    expect(page.locator(".figure.usage-cost")).to_have_text("$0.3300")
