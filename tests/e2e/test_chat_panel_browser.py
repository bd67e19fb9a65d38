"""The chat's transcript on a long branch (selectors/panels/chat.py), in headless
Chromium: the page carries the branch's last entries only, and "Show earlier" puts the
chunk before them above, once each, until the branch's start (issue 34: the first load of
a long session stays small)."""

import pytest
from playwright.sync_api import expect

from sessions_app.selectors.panels.chat import TRANSCRIPT_LIMIT
from sessions_app.services import sessions
from tests.support.branchy_session import user
from tests.support.browser import collect_errors

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_show_earlier_puts_each_earlier_chunk_above_until_the_start(page_for, make_user):
    owner = make_user("long-chat")
    session = sessions.create_session(owner=owner, cwd="/w", name="long")
    total = TRANSCRIPT_LIMIT * 2 + 7
    for i in range(total):
        sessions.append_entry(session, user(f"message {i:03d}"), actor=owner)
    page = page_for(owner)
    errors = collect_errors(page)
    page.goto(f"/s/{session.pi_id}/")
    transcript = page.locator("#chat-transcript")
    messages = transcript.locator(".chat-msg")
    expect(messages).to_have_count(TRANSCRIPT_LIMIT)
    expect(messages.last).to_contain_text(f"message {total - 1:03d}")
    expect(transcript).not_to_contain_text("message 000")
    expect(transcript.locator(".chat-hidden")).to_contain_text(
        f"{total - TRANSCRIPT_LIMIT} earlier entries on this branch not shown"
    )
    for shown in (TRANSCRIPT_LIMIT * 2, total):
        transcript.locator(".chat-hidden .chat-earlier").click()
        expect(messages).to_have_count(shown)
    expect(messages.first).to_contain_text("message 000")
    expect(transcript.locator(".chat-hidden")).to_have_count(0)
    ids = messages.evaluate_all("els => els.map(e => e.dataset.entryId)")
    assert len(set(ids)) == total
    texts = messages.evaluate_all("els => els.map(e => e.querySelector('.chat-body').innerText)")
    assert [t.strip() for t in texts] == [f"message {i:03d}" for i in range(total)]
    assert errors == []


def test_the_socket_catches_up_only_when_the_session_changed_since_the_page(page_for, make_user):
    """On its socket's first open the page compares the stamp it was drawn at with the
    hello's: the same, no panel asks again; an entry appended between drawing the page
    and its socket's opening makes the page ask for its live panels again."""
    owner = make_user("catch-up")
    session = sessions.create_session(owner=owner, cwd="/w", name="catch up")
    for i in range(3):
        sessions.append_entry(session, user(f"message {i}"), actor=owner)
    page = page_for(owner)
    errors = collect_errors(page)
    asked: list[str] = []
    page.on(
        "request", lambda r: asked.append(r.url) if r.resource_type in ("xhr", "fetch") else None
    )

    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.caughtUp === 'same'", timeout=30000)
    page.wait_for_timeout(600)  # past the panels' trigger delays (80-300 ms)
    live = ("/chat/transcript/", "/chat/queued/", "/chat/model", "/jobs/", "/stats")
    assert [url for url in asked if any(part in url for part in live)] == [], asked

    def late_script(route):
        # The page is drawn (its stamp with it) and asks for its script: an entry comes
        # before the script runs and its socket opens.
        if not changed:
            changed.append(sessions.append_entry(session, user("message 3"), actor=owner))
        route.continue_()

    changed: list = []
    page.route("**/static/piweb/piweb.js*", late_script)
    asked.clear()
    page.goto(f"/s/{session.pi_id}/")
    assert changed
    page.wait_for_function("() => document.body.dataset.caughtUp === 'changed'", timeout=30000)
    expect(page.locator("#chat-transcript .chat-msg")).to_have_count(4)
    page.wait_for_timeout(600)
    assert any("transcript" in url for url in asked), asked
    assert errors == []
