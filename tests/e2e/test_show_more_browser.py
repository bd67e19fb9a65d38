"""A large entry in headless Chromium: the pane shows a preview; "Show the whole text"
and "Show more" fetch the rest lazily, one bounded window at a time, with no inline
script (the page fails on any CSP violation)."""

import pytest
from playwright.sync_api import expect

from sessions_app.services import sessions
from tests.support.branchy_session import user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_show_more_loads_a_large_entry_window_by_window(page_for, make_user):
    owner = make_user("big-owner")
    session = sessions.create_session(owner=owner, cwd="/w", name="big")
    text = "".join(f"row {i:06d} <i>raw</i>\n" for i in range(22_000))  # ~460,000 chars
    entry = sessions.append_entry(session, user(text))
    page = page_for(owner)
    page.goto(f"/s/{session.pi_id}/?target={entry.pi_id}")
    pane = page.locator("#entry-pane")
    expect(pane).to_contain_text("more characters not shown")
    assert "row 021999" not in pane.inner_text()
    pane.get_by_role("button", name="Show the whole text").click()
    expect(pane.locator("pre.entry-text")).to_have_count(1)
    pane.get_by_role("button", name="Show more").click()
    expect(pane.locator("pre.entry-text")).to_have_count(2)
    pane.get_by_role("button", name="Show more").click()
    expect(pane.locator("pre.entry-text")).to_have_count(3)
    expect(pane).to_contain_text("End of the text")
    expect(pane.locator("pre.entry-text").last).to_contain_text("row 021999 <i>raw</i>")
    assert pane.locator("pre.entry-text i").count() == 0  # shown as text, not markup
    download = pane.get_by_role("link", name="Download the entry (JSON)")
    assert download.get_attribute("href") == f"/s/{session.pi_id}/e/{entry.pi_id}/raw/"
