"""While the agent works (issue 27), in headless Chromium: Esc stops the run; a run that
ends while the tab is hidden changes the tab title and raises a notification (permission
granted), and the title comes back when the tab is shown."""

import pytest
from playwright.sync_api import expect

from sessions_app.services import sessions
from tests.support.agent_runs import new_session, wait_run
from tests.support.browser import collect_errors
from tests.support.scripted_llm import hang, text
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.worker]

HIDE = """() => {
  window.__hidden = true;
  Object.defineProperty(document, 'hidden', { configurable: true, get: () => window.__hidden });
  window.__notes = [];
  window.Notification = function (title, opts) { window.__notes.push(title + ' | ' + opts.body); };
  window.Notification.permission = 'granted';
}"""


def test_escape_stops_and_hidden_tab_is_told(worker, page_for, llm, make_user, workspace):
    user = make_user("watcher")
    session = new_session(user, workspace)
    sessions.rename_session(session, "watched run", actor=user)
    page = page_for(user)
    errors = collect_errors(page)
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)

    # Esc stops a run that hangs.
    llm.push(hang(30))
    page.fill("#chat-input", "take your time")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat")).to_have_attribute("data-running", "true", timeout=20000)
    # The request is in the model's hands before Esc (an earlier Esc stops the run before it
    # asks, and the hang would then answer the next run).
    assert wait_until(lambda: llm.pending() == 0 and len(llm.requests) == 1)
    page.locator("body").press("Escape")
    expect(page.locator("#chat")).to_have_attribute("data-running", "false", timeout=20000)
    assert wait_run(session).status == "cancelled"

    # A run that finishes while the tab is hidden: title and notification.
    page.evaluate(HIDE)
    llm.push(text("All done here."))
    page.fill("#chat-input", "quick one")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-transcript")).to_contain_text("All done here.", timeout=30000)
    page.wait_for_function("() => document.title.startsWith('✓ finished')", timeout=15000)
    notes = page.evaluate("() => window.__notes")
    assert notes and notes[0].startswith("pi finished | watched run")
    page.evaluate(
        "() => { window.__hidden = false; document.dispatchEvent(new Event('visibilitychange')); }"
    )
    assert page.title() == "watched run · piweb"
    assert not errors, errors
