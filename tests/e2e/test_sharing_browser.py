"""Sharing in headless Chromium: share a branch link and open it logged out; the open page
hears when the branch grows and when the link is revoked."""

import threading

import pytest
from playwright.sync_api import expect

from sessions_app.models import ShareLink
from sessions_app.services import sessions
from tests.support.branchy_session import assistant, build_branchy_session
from tests.support.waiting import wait_db

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_share_a_branch_link_and_open_it_logged_out(page_for, make_user, artifact_dir):
    owner = make_user("owner")
    data = build_branchy_session(owner)
    ids = data.ids
    page = page_for(owner)
    page.goto(f"/s/{data.session.pi_id}/sharing/?leaf={ids['a3']}&target={ids['a2']}")
    page.check("input[name=scope][value=subtree]")  # the node and everything under it
    page.click("#rv-create-link")
    link_url = page.input_value("#rv-new-link")
    link = ShareLink.objects.get()
    assert link.leaf_pi_id == ids["a3"] and link.target_pi_id == ids["a2"]
    assert link.scope == ShareLink.Scope.SUBTREE

    visitor = page_for(None)  # logged out
    visitor.goto(link_url)
    expect(visitor.locator(".rv-live-note")).to_contain_text("a node and everything under it")
    expect(visitor.locator(".rv-live-note")).to_contain_text("as they are now")
    expect(visitor.locator(f"#e-{ids['a3']}")).to_contain_text("Fixed the parser")
    expect(visitor.locator(f"#e-{ids['a2']}")).to_have_class(
        "rv-entry rv-type-message rv-role-assistant rv-target"
    )
    assert visitor.locator(f"#e-{ids['b3']}").count() == 0
    # read-only: no comment box, no actions
    assert visitor.locator("textarea, .rv-comment-form, #chat-panel").count() == 0
    # only the shared branch: no row of branch B in the tree
    assert visitor.locator(f".rv-node[data-entry-id='{ids['b3']}']").count() == 0
    # the websocket opens with the token and the page notices when the branch grows
    visitor.wait_for_function("() => document.body.dataset.ws === 'open'")
    # (from another thread: Playwright's loop runs in this one, and publishing uses async_to_sync)
    appended = {}

    def grow():
        sessions.append_entry(data.session, assistant("On branch B, not shared."), actor=owner)
        appended["entry"] = sessions.append_entry(
            data.session,
            assistant("Live update after sharing."),
            parent_pi_id=ids["a3"],
            actor=owner,
        )

    worker_thread = threading.Thread(target=grow)
    worker_thread.start()
    worker_thread.join(30)
    expect(visitor.locator(".rv-changed")).to_be_visible()
    visitor.screenshot(path=str(artifact_dir / "review-share-link.png"))
    # what grew below the shared entry is a click away in the tree; branch B is not
    new_id = appended["entry"].pi_id
    visitor.reload()
    visitor.click(f".rv-node[data-entry-id='{new_id}'] a")
    expect(visitor.locator(f"#e-{new_id}")).to_contain_text("Live update after sharing.")
    assert visitor.locator("text=On branch B, not shared.").count() == 0
    visitor.wait_for_function("() => document.body.dataset.ws === 'open'")

    # revoked: the open page is told at once (socket closed 4403), and the link is gone
    page.goto(f"/s/{data.session.pi_id}/sharing/")
    page.click(".rv-links-table button:has-text('Revoke')")
    wait_db(lambda: ShareLink.objects.get(pk=link.pk).revoked_at)
    expect(visitor.locator(".rv-link-gone")).to_be_visible()
    response = visitor.goto(link_url)
    assert response.status == 404
