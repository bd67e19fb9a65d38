"""Several runs in one session, in the browser (issue 36): the page shows the live output
of the run on the branch it shows, and its Stop stops that run only."""

import pytest
from playwright.sync_api import expect

from sessions_app.selectors.runs import active_run, run_state
from sessions_app.services import chat, navigation, sessions
from tests.support.agent_runs import new_session
from tests.support.scripted_llm import text, tool_call
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.worker]


def _gated(name: str) -> str:
    return f"while [ ! -f {name} ]; do sleep 0.05; done; echo released-{name}"


def _status(job):
    job.refresh_from_db()
    return job.status


def test_the_page_follows_its_branchs_run_and_stops_only_that_one(
    worker, page_for, llm, make_user, workspace
):
    user = make_user()
    session = new_session(user, workspace)
    node = sessions.append_entry(session, {"type": "session_info", "name": "fork point"})
    # Branch A runs (sent from elsewhere), waiting in its tool.
    llm.push(tool_call("bash", {"command": _gated("go-a")}, call_id="ca"))
    run_a = chat.send_message(session, user, "try A")
    assert wait_until(lambda: "ca" in ((run_state(session, run_a) or {}).get("tools") or {}), 60)

    page = page_for(user)
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    expect(page.locator('#chat-live-tools [data-tool-call-id="ca"]')).to_be_visible(timeout=30000)
    expect(page.locator("#chat")).to_have_attribute("data-run-id", str(run_a.pk))

    # The leaf goes back to the node: A's run is another branch's now, and the page
    # drops its live output.
    navigation.navigate(session, node.pi_id, actor=user)
    expect(page.locator('#chat-live-tools [data-tool-call-id="ca"]')).to_have_count(0)
    expect(page.locator("#chat")).to_have_attribute("data-running", "false")

    # A message from the node starts branch B beside A; the page shows B's output only.
    llm.push(tool_call("bash", {"command": _gated("go-b")}, call_id="cb"))
    page.fill("#chat-input", "try B")
    page.press("#chat-input", "Enter")
    expect(page.locator('#chat-live-tools [data-tool-call-id="cb"]')).to_be_visible(timeout=30000)
    expect(page.locator('#chat-live-tools [data-tool-call-id="ca"]')).to_have_count(0)
    session.refresh_from_db()
    run_b = active_run(session)
    assert run_b is not None and run_b.pk != run_a.pk
    expect(page.locator("#chat")).to_have_attribute("data-run-id", str(run_b.pk))
    assert _status(run_a) == "running" and _status(run_b) == "running"

    # Stop on this page stops B; A runs on.
    page.click("#chat-stop")
    assert wait_until(lambda: _status(run_b) == "cancelled", 30)
    expect(page.locator("#chat")).to_have_attribute("data-running", "false", timeout=30000)
    assert _status(run_a) == "running"
    llm.push(text("A is done."))
    (workspace / "go-a").write_text("")
    assert wait_until(lambda: _status(run_a) == "done", 60)
    expect(page.locator('#chat-live-tools [data-tool-call-id="ca"]')).to_have_count(0)
