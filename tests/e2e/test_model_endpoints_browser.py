"""An admin adds a model endpoint on the Models page, and another user chats on it: the
endpoint is the scripted OpenAI-compatible server on loopback, and the run is made by the
real worker with the endpoint's key (which no page shows back)."""

import pytest
from playwright.sync_api import expect

from sessions_app.models import ModelEndpoint
from tests.support.agent_runs import messages, new_session, wait_run
from tests.support.scripted_llm import text

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

ENDPOINT_KEY = "sk-endpoint-browser-0042"


@pytest.mark.worker
def test_an_admin_adds_an_endpoint_and_a_user_chats_on_it(
    worker, page_for, llm, make_user, workspace
):
    admin = make_user("endpoint-admin", is_staff=True)
    user = make_user("endpoint-user")
    page = page_for(admin)
    page.goto("/models/")
    page.fill("#endpoint-provider", "office-proxy")
    page.select_option("#endpoint-api", "openai-completions")
    page.fill("#endpoint-base-url", llm.base_url)
    page.fill("#endpoint-models", "office-model, 64k, 2048, 1, 2\noffice-small")
    page.fill("#endpoint-key", ENDPOINT_KEY)
    page.click("#endpoint-form button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Saved the endpoint office-proxy: 2 models")
    row = page.locator('#endpoints-table tr[data-endpoint="office-proxy"]')
    expect(row.locator(".endpoint-key")).to_have_text("stored (…0042)")
    assert ENDPOINT_KEY not in page.content()
    stored = ModelEndpoint.objects.get(provider="office-proxy")
    assert ENDPOINT_KEY.encode() not in bytes(stored.encrypted_key)

    # Another user (no key of their own, no admin) sees the model, with its window and
    # price, and chats on it.
    session = new_session(user, workspace)
    page = page_for(user)
    page.goto("/models/")
    expect(page.locator("#endpoint-form")).to_have_count(0)
    expect(page.locator('#endpoints-table tr[data-endpoint="office-proxy"]')).to_be_visible()
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    option = page.locator('#chat-model-select option[value="office-proxy/office-model"]')
    expect(option).to_contain_text("64k")
    expect(option).to_contain_text("$1 in / $2 out per M")
    page.select_option("#chat-model-select", "office-proxy/office-model")
    page.click(".chat-model-form button[type=submit]")
    expect(page.locator("#chat-model")).to_have_text("office-proxy/office-model")

    llm.push(
        text(
            "Answered by the office endpoint.",
            usage={
                "prompt_tokens": 1_000_000,
                "completion_tokens": 1000,
                "total_tokens": 1_001_000,
            },
        )
    )
    page.fill("#chat-input", "hello endpoint")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-transcript")).to_contain_text(
        "Answered by the office endpoint.", timeout=30000
    )
    job = wait_run(session)
    assert job.status == "done" and job.params["key_source"] == "endpoint"
    assert llm.authorizations[-1] == f"Bearer {ENDPOINT_KEY}"
    assert llm.requests[-1]["model"] == "office-model"
    reply = messages(session)[-1]
    assert (reply["provider"], reply["model"]) == ("office-proxy", "office-model")
    assert reply["usage"]["cost"]["total"] == pytest.approx(1.002)
    assert ENDPOINT_KEY not in page.content()
