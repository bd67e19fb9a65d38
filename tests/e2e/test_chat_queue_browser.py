"""Steering and follow-up in a real browser: while the agent works, Enter queues a steer
and Alt+Enter a follow-up; the queue shows in every tab of the session, survives a reload,
each message can be cancelled, and each reaches the model where pi would deliver it. Esc
stops the run and puts what was queued back in the box."""

import pytest
from playwright.sync_api import expect

from sessions_app.models import QueuedMessage
from sessions_app.services import sessions
from tests.support.agent_runs import messages, new_session, wait_run
from tests.support.images import png
from tests.support.scripted_llm import text, tool_call, user_text

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.worker]

GATED = "while [ ! -f go ]; do sleep 0.05; done; echo released"


def open_session(page_for, user, session):
    page = page_for(user)
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    return page


def start_gated_run(page_for, user, session):
    sessions.rename_session(session, "queue browser test", actor=user)
    page = open_session(page_for, user, session)
    page.fill("#chat-input", "start")
    page.press("#chat-input", "Enter")
    expect(page.locator('#chat-live-tools [data-tool-call-id="c1"]')).to_be_visible(timeout=30000)
    expect(page.locator("#chat-steer")).to_be_visible()
    expect(page.locator("#chat-follow-up")).to_be_visible()
    return page


def test_steer_and_follow_up_are_queued_cancelled_and_delivered_in_order(
    worker, page_for, llm, make_user, workspace
):
    user = make_user()
    session = new_session(user, workspace)
    llm.push(
        tool_call("bash", {"command": GATED}, call_id="c1"),
        text("Steered answer."),
        text("Follow-up answer."),
    )
    page = start_gated_run(page_for, user, session)
    other_tab = open_session(page_for, user, session)
    queue = page.locator("#chat-queue .queued")

    page.fill("#chat-input", "steer please")
    page.press("#chat-input", "Enter")  # Enter while the agent works: a steer
    expect(queue).to_have_count(1)
    expect(page.locator("#chat-input")).to_have_value("")
    page.fill("#chat-input", "drop me")
    page.click("#chat-steer")
    expect(queue).to_have_count(2)
    # Every tab of the session sees the queue (over the websocket).
    expect(other_tab.locator("#chat-queue .queued")).to_have_count(2)

    queue.filter(has_text="drop me").locator(".queued-cancel").click()
    expect(queue).to_have_count(1)
    expect(other_tab.locator("#chat-queue .queued")).to_have_count(1)
    # Stored server-side: a reload shows the same queue.
    page.reload()
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    expect(queue).to_have_count(1)
    expect(queue.nth(0)).to_have_attribute("data-mode", "steer")
    expect(queue.nth(0)).to_contain_text("steer please")
    page.fill("#chat-input", "then follow")
    page.press("#chat-input", "Alt+Enter")  # a follow-up
    expect(queue).to_have_count(2)
    expect(queue.nth(1)).to_have_attribute("data-mode", "follow_up")
    expect(queue.nth(1)).to_contain_text("Follow-up")
    expect(other_tab.locator("#chat-queue .queued")).to_have_count(2)
    expect(page.locator("#chat-notice")).to_contain_text("Queued as a follow-up")

    (workspace / "go").write_text("")  # the tool call finishes: the steer goes in
    transcript = page.locator("#chat-transcript")
    expect(transcript).to_contain_text("Follow-up answer.", timeout=30000)
    expect(queue).to_have_count(0)
    # Delivered: the notice that said it was queued is gone, without a reload.
    expect(page.locator("#chat-notice")).not_to_contain_text("Queued")
    expect(other_tab.locator("#chat-queue .queued")).to_have_count(0)
    shown = transcript.text_content()
    order = ["start", "released", "steer please", "Steered answer.", "then follow"]
    positions = [shown.index(s) for s in [*order, "Follow-up answer."]]
    assert positions == sorted(positions), shown
    assert "drop me" not in shown
    assert wait_run(session).status == "done"

    users = [user_text(m) for m in messages(session) if m["role"] == "user"]
    assert users == ["start", "steer please", "then follow"]
    # The model got the steer right after the tool result, the follow-up after its answer.
    assert len(llm.requests) == 3
    second = llm.requests[1]["messages"]
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "user"]
    assert user_text(second[-1]) == "steer please"
    third = llm.requests[2]["messages"]
    assert third[-2]["role"] == "assistant" and user_text(third[-1]) == "then follow"
    assert page.csp_violations == [] and other_tab.csp_violations == []


def test_escape_stops_the_run_and_puts_the_queue_back_in_the_box(
    worker, page_for, llm, make_user, workspace
):
    user = make_user()
    session = new_session(user, workspace)
    llm.push(tool_call("bash", {"command": GATED}, call_id="c1"), text("never asked"))
    page = start_gated_run(page_for, user, session)
    page.fill("#chat-input", "a follow-up")
    page.press("#chat-input", "Alt+Enter")
    page.fill("#chat-input", "a steer")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-queue .queued")).to_have_count(2)
    page.fill("#chat-input", "still typing")
    page.locator("#chat-input").blur()
    page.keyboard.press("Escape")
    expect(page.locator("#chat")).to_have_attribute("data-running", "false", timeout=20000)
    # As pi: steers, then follow-ups, then what was in the box.
    expect(page.locator("#chat-input")).to_have_value("a steer\n\na follow-up\n\nstill typing")
    expect(page.locator("#chat-queue .queued")).to_have_count(0)
    assert wait_run(session).status == "cancelled"
    assert not QueuedMessage.objects.filter(session=session).exists()
    assert [user_text(m) for m in messages(session) if m["role"] == "user"] == ["start"]


def test_images_are_not_queued_they_stay_attached_until_the_run_is_done(
    worker, page_for, llm, make_user, workspace
):
    user = make_user()
    session = new_session(user, workspace, profile="scripted-vision")
    llm.push(tool_call("bash", {"command": GATED}, call_id="c1"), text("Done."), text("Seen."))
    page = start_gated_run(page_for, user, session)
    thumbs = page.locator("#composer-images .composer-thumb")
    image = {"name": "red.png", "mimeType": "image/png", "buffer": png(rgb=(220, 0, 0))}
    page.set_input_files("#composer-file", files=[image])
    expect(thumbs).to_have_count(1)
    page.fill("#chat-input", "look at this")
    for queue_it in (
        lambda: page.press("#chat-input", "Enter"),
        lambda: page.press("#chat-input", "Alt+Enter"),
        lambda: page.click("#chat-steer"),
        lambda: page.click("#chat-follow-up"),
    ):
        queue_it()
        expect(page.locator("#chat-notice")).to_contain_text("cannot wait in the steering")
        page.evaluate("document.getElementById('chat-notice').textContent = ''")
    assert not QueuedMessage.objects.filter(session=session).exists()
    expect(thumbs).to_have_count(1)
    expect(page.locator("#chat-input")).to_have_value("look at this")

    (workspace / "go").write_text("")
    expect(page.locator("#chat-transcript")).to_contain_text("Done.", timeout=30000)
    wait_run(session)
    expect(page.locator("#chat")).to_have_attribute("data-running", "false")
    page.press("#chat-input", "Enter")  # the run is over: now the image is sent
    expect(page.locator("#chat-transcript")).to_contain_text("Seen.", timeout=30000)
    expect(thumbs).to_have_count(0)
    content = llm.requests[-1]["messages"][-1]["content"]
    assert [part["type"] for part in content] == ["text", "image_url"]
