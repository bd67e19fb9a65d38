"""File changes in a real browser: the chat's "files changed" card and its diff, the
entry pane's diff, the compare page's file changes, and restoring files to a node
(through the real worker, which takes the snapshots)."""

import os

import pytest
from playwright.sync_api import expect

from sessions_app.services import sessions
from tests.support.agent_runs import new_session, wait_run
from tests.support.browser import collect_errors
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.worker]


# Counts the chat transcript's htmx swaps, and notes the count when a run ends.
COUNT_TRANSCRIPT_REFRESHES = """() => {
  window.transcriptRefreshes = 0;
  window.refreshesAtRunEnd = Infinity;
  document.body.addEventListener("htmx:afterSettle", (ev) => {
    if (ev.detail.elt && ev.detail.elt.id === "chat-transcript") window.transcriptRefreshes++;
  });
  document.body.addEventListener("piweb:run_end", () => {
    window.refreshesAtRunEnd = window.transcriptRefreshes;
  });
}"""


def send(page, session, command):
    """Send a `!cmd` and wait for its run to finish; the entry it made."""
    count = session.entries.count()
    page.fill("#chat-input", command)
    page.click("#chat-send")
    assert wait_until(lambda: session.entries.count() > count, 30)
    assert wait_run(session).status == "done"
    session.refresh_from_db()
    return session.leaf_pi_id


def test_diff_views_and_restore(worker, page_for, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    sessions.rename_session(session, "changes browser test", actor=user)
    cwd = session.cwd
    with open(f"{cwd}/app.py", "w") as fh:
        fh.write("def main():\n    return 1\n")
    page = page_for(user)
    errors = collect_errors(page)
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    page.evaluate(COUNT_TRANSCRIPT_REFRESHES)

    first = send(page, session, "!sed -i 's/return 1/return 2/' app.py")
    card = page.locator(f'.changes-card[data-entry-id="{first}"]')
    expect(card).to_contain_text("1 file changed", timeout=20000)
    expect(page.locator("#chat")).to_have_attribute("data-running", "false")
    # The transcript's refresh for the run's end has been swapped in (a click before it
    # could land on the card it replaces).
    page.wait_for_function("() => window.transcriptRefreshes > window.refreshesAtRunEnd")
    card.get_by_role("button", name="Show the diffs").click()
    expect(card.locator("tr.add")).to_contain_text("return 2")
    expect(card.locator("tr.del")).to_contain_text("return 1")

    second = send(page, session, "!echo 'x = 3' > app.py && touch new.txt")
    # The transcript refreshed for the new entries; the diffs opened above stay open.
    expect(page.locator(f'.changes-card[data-entry-id="{second}"]')).to_be_visible()
    expect(card.locator("tr.add")).to_contain_text("return 2")

    # The first node's pane: its diff, then "Restore files to this node".
    page.goto(f"/s/{session.pi_id}/?target={first}")
    pane = page.locator(".entry-changes")
    expect(pane.locator('.changes-file[data-path="app.py"]')).to_be_visible(timeout=20000)
    expect(page.locator(f"#n-{first} .tree-chg")).to_contain_text("+1")
    pane.get_by_role("button", name="Restore files to this node").click()
    page.locator("#confirm-dialog button[value=ok]").click()  # the page's confirm dialog
    expect(page.locator("#entry-status")).to_contain_text("back as this node left them")
    with open(f"{cwd}/app.py") as fh:
        assert fh.read() == "def main():\n    return 2\n"
    assert not os.path.exists(f"{cwd}/new.txt")

    # The compare page lists both branches' file changes.
    page.goto(f"/s/{session.pi_id}/compare/?a={first}&b={second}")
    expect(page.locator('#changes-compare [data-side="B"]')).to_contain_text(
        "new.txt", timeout=20000
    )
    assert not errors, errors
