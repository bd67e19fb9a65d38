"""The chat in a real browser: type a request, watch the text stream and the bash output
go by live, stop the run."""

import pytest
from playwright.sync_api import expect

from sessions_app.models import Job
from sessions_app.selectors import paths
from sessions_app.services import sessions
from tests.support.agent_runs import messages, new_session, wait_run
from tests.support.scripted_llm import text, tool_call

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.worker]


def open_session(page_for, user, session):
    # (An entry first: the review panel cannot yet render a session without a leaf.)
    sessions.rename_session(session, "chat browser test", actor=user)
    page = page_for(user)
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    return page


def test_type_watch_streamed_text_and_live_bash_then_stop(
    worker, page_for, llm, make_user, workspace
):
    user = make_user()
    session = new_session(user, workspace)
    llm.push(
        tool_call(
            "bash",
            {"command": "for i in $(seq 1 600); do echo tick$i; sleep 0.05; done"},
            text="Starting the ticker now, it will print many lines for a while.",
            chunk_size=3,
            delay_between_chunks=0.05,
            call_id="call_tick",
        )
    )
    page = open_session(page_for, user, session)
    page.fill("#chat-input", "run the ticker")
    page.press("#chat-input", "Enter")
    # The user's message lands in the transcript, the answer streams into the live area.
    expect(page.locator("#chat-transcript")).to_contain_text("run the ticker")
    expect(page.locator("#chat-live-text")).to_contain_text("Starting the ticker")
    # The bash output streams live, with the snapshot's line counter.
    live_bash = page.locator('#chat-live-tools [data-tool-call-id="call_tick"]')
    expect(live_bash.locator("pre")).to_contain_text("tick20", timeout=20000)
    expect(live_bash.locator(".live-tool-info")).to_contain_text("showing lines 1")
    assert page.locator("#chat").get_attribute("data-running") == "true"
    # Every text the notice shows, in order (the "Stopping…" may be short-lived).
    page.evaluate(
        """() => { window.noticeTexts = [];
        new MutationObserver(() => window.noticeTexts.push(
            document.getElementById("chat-notice").textContent)
        ).observe(document.getElementById("chat-notice"), {childList: true, subtree: true}); }"""
    )
    page.click("#chat-stop")
    expect(page.locator("#chat")).to_have_attribute("data-running", "false", timeout=20000)
    # "Stopping…" was said, and went when the run ended, without a reload.
    assert any("Stopping" in t for t in page.evaluate("window.noticeTexts"))
    expect(page.locator("#chat-notice")).not_to_contain_text("Stopping")
    expect(page.locator("#chat-transcript")).to_contain_text("Command aborted")
    expect(page.locator("#chat-live")).to_be_hidden()
    job = wait_run(session)
    assert job.status == "cancelled"
    msgs = messages(session)
    assert [m["role"] for m in msgs] == ["user", "assistant", "toolResult", "assistant"]
    assert msgs[-1]["stopReason"] == "aborted"
    assert "tick20" in msgs[2]["content"][0]["text"]


def test_reload_mid_run_shows_the_run_and_bang_command(worker, page_for, llm, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    page = open_session(page_for, user, session)
    page.fill("#chat-input", "!for i in $(seq 1 80); do echo row$i; sleep 0.05; done")
    page.click("#chat-send")
    expect(page.locator("#chat-live-tools pre")).to_contain_text("row5", timeout=20000)
    page.reload()
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    # After the reload the run is shown from the saved state, then keeps streaming.
    expect(page.locator("#chat-live-tools pre")).to_contain_text("row", timeout=5000)
    expect(page.locator("#chat-transcript")).to_contain_text("row80", timeout=30000)
    assert wait_run(session).status == "done"
    # Navigate-to-user-message puts text back into the box.
    page.evaluate(
        "document.dispatchEvent(new CustomEvent('piweb:prefill-input', {detail: {text: 'edit me'}}))"
    )
    expect(page.locator("#chat-input")).to_have_value("edit me")


def test_busy_and_no_model_messages_show_in_the_page(worker, page_for, llm, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace, profile="nothing-configured")
    page = open_session(page_for, user, session)
    expect(page.locator("#chat-nomodel")).to_contain_text("PIWEB_LLM_BASE_URL")
    page.fill("#chat-input", "hello?")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-notice")).to_contain_text("No model is configured")
    assert not Job.objects.filter(session=session).exists()
    # Pick a configured model in the panel; the next message goes to it.
    page.select_option("#chat-model-select", "openai-compatible/scripted-model")
    page.click(".chat-model-form button")
    expect(page.locator("#chat-notice")).to_contain_text("Model: openai-compatible/scripted-model")
    # The model can run now: the notice saying it cannot goes, without a reload.
    expect(page.locator("#chat-nomodel")).to_have_count(0)
    llm.push(text("hello from the model", chunk_size=4, delay_between_chunks=0.02))
    page.fill("#chat-input", "hello again")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-transcript")).to_contain_text("hello from the model", timeout=30000)
    assert wait_run(session).status == "done"
    session.refresh_from_db()
    assert session.model_profile == "scripted"
    assert any(e["type"] == "model_change" for e in paths.load_path(session))
