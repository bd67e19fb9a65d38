"""Tree actions (issue 27), in headless Chromium: "Compare with…" takes the second node
from a click in the tree (no typed ids), and the share dialog previews what a link shows
and copies the new link."""

import pytest
from playwright.sync_api import expect

from tests.support.browser import collect_errors
from tests.support.tree_data import import_branched

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_compare_by_click_and_share_preview_with_copy(page_for, make_user, workspace):
    owner = make_user("picker")
    session = import_branched(owner, str(workspace))
    page = page_for(owner)
    errors = collect_errors(page)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"/s/{session.pi_id}/")
    page.click("#n-e0000014 .preview")
    page.wait_for_selector('#entry-pane [data-entry="e0000014"]')

    # Compare with…: a notice, Esc cancels; then a click on another node compares.
    page.click("#compare-with")
    expect(page.locator("#pick-notice")).to_contain_text("e0000014")
    page.keyboard.press("Escape")
    expect(page.locator("#pick-notice")).to_have_count(0)
    page.click("#compare-with")
    page.click("#n-e0000010 .preview")
    page.wait_for_url("**/compare/?a=e0000014&b=e0000010")
    expect(page.locator("#rv-ancestor")).to_contain_text("Common ancestor")
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")

    # Share…: the dialog previews both scopes for the node, and copies the new link.
    page.goto(f"/s/{session.pi_id}/")
    page.click("#n-e0000004 .preview")
    page.wait_for_selector('#entry-pane [data-entry="e0000004"]')
    page.click("#share-node")
    preview = page.locator("#rv-share-preview")
    expect(preview).to_contain_text("e0000004")
    path_count = int(preview.locator('[data-scope="path"] strong').inner_text())
    subtree_count = int(preview.locator('[data-scope="subtree"] strong').inner_text())
    assert 0 < path_count < subtree_count
    page.click("#rv-create-link")
    link = page.locator("#rv-new-link").input_value()
    assert "/l/" in link
    page.click("#rv-copy-new-link")
    expect(page.locator("#rv-copy-new-link")).to_have_text("Copied")
    assert page.evaluate("() => navigator.clipboard.readText()") == link
    assert not errors, errors
