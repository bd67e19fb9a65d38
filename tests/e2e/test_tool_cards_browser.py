"""Tool calls say what they did, and a tree you can read (issue 34), in headless
Chromium. In the chat a bash call reads as its command without a click, with its status
and duration and its result's first line under it; the call id only inside the folded
call. In the tree the same call's rows carry the same headline, folds say what they hide,
and numbers carry their tooltips."""

import pytest
from playwright.sync_api import expect

from tests.support.browser import collect_errors
from tests.support.tree_data import import_branched

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_a_bash_call_shows_its_command_status_and_duration_without_a_click(
    page_for, make_user, workspace
):
    owner = make_user("cards-browser")
    session = import_branched(owner, str(workspace))
    page = page_for(owner)
    errors = collect_errors(page)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/s/{session.pi_id}/")
    card = page.locator("#chat-transcript .tool-card", has_text="$ make test")
    expect(card).to_have_count(1)
    head = card.locator(".tool-call-head")
    expect(head.locator(".tool-headline")).to_have_text("$ make test")
    expect(head.locator(".tool-headline")).to_be_visible()
    expect(head.locator(".tool-status.ok [aria-label=succeeded]")).to_be_visible()
    expect(head.locator(".tool-duration")).to_have_text("1.0 s")
    expect(head.locator(".tool-duration")).to_be_visible()
    # The result's first line under the call, folded; the call id only in the details.
    preview = card.locator("details.tool-result:not([open]) .result-preview")
    expect(preview).to_be_visible()
    expect(preview).to_contain_text("ok <img")
    expect(card.locator(".tool-call-meta")).to_be_hidden()
    assert "call_b1" not in head.inner_text()
    card.locator(".tool-call-head").click()
    expect(card.locator(".tool-call-meta")).to_contain_text("call_b1")
    # The tree's rows for that call and its result read the same headline.
    page.goto(f"/s/{session.pi_id}/?filter=all")
    expect(page.locator("#n-e0000012 .headline")).to_have_text("$ make test")
    expect(page.locator("#n-e0000013 .headline")).to_have_text("$ make test")
    assert page.evaluate("() => window.__pwned") is None
    assert errors == []


def test_folding_a_side_branch_keeps_a_counted_row_and_folds_say_what_they_hide(
    page_for, make_user, workspace
):
    """Issue 34: `f` on a side branch's head folds the branch behind that head, which then
    says how many entries it hides; a run's toggle names the kinds it holds; the numbers
    on a row carry a tooltip; the branch point says how many branches leave it."""
    owner = make_user("tree-reader")
    session = import_branched(owner, str(workspace))
    page = page_for(owner)
    page.goto(f"/s/{session.pi_id}/")
    head = page.locator("#n-e000000a")
    expect(head.locator(".fold-count")).to_be_hidden()
    head.locator(".preview").click()
    page.locator("#tree-panel .tree").focus()
    page.keyboard.press("f")
    expect(page.locator("#n-e000000b")).to_be_hidden()
    expect(head).to_be_visible()
    expect(head.locator(".fold-count")).to_be_visible()
    # b, c, d, e and the label entry f1 (which the default filter does not draw)
    expect(head.locator(".fold-count")).to_have_text("5 entries folded")
    page.keyboard.press("f")
    expect(page.locator("#n-e000000b")).to_be_visible()
    expect(head.locator(".fold-count")).to_be_hidden()
    toggle = page.locator(".tgroup.run > .tgroup-toggle").first
    expect(toggle.locator(".fold-what")).to_contain_text("assistant message")
    expect(page.locator("#n-e0000004 .badge.fork")).to_have_attribute(
        "title", "Branch point: 3 branches leave this entry"
    )
    assert page.locator("#n-e0000014 .tok").get_attribute("title").endswith("tokens (estimate)")
