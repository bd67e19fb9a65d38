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


def test_every_surface_reads_a_call_by_its_headline_and_keeps_its_id_in_the_details(
    page_for, make_user, workspace
):
    """Issue 34: the one headline (core/tool_headline) on the entry pane, the share page,
    the HTML export, the Markdown export and search results, for the call and for the
    result that answers it; the call id is in no visible text (only in a folded call's
    details, or the entry pane's call details)."""
    from sessions_app.services import search as search_index
    from sessions_app.services import sharing

    owner = make_user("heads-browser")
    session = import_branched(owner, str(workspace))
    search_index.index_session(session)
    page = page_for(owner)
    errors = collect_errors(page)
    page.goto(f"/s/{session.pi_id}/?filter=all")

    # The entry pane: the call's and the result's header, and the result's frame.
    for entry_id in ("e0000012", "e0000013"):
        page.click(f"#n-{entry_id} .preview")
        pane = page.locator(f'#entry-pane [data-entry="{entry_id}"]')
        expect(pane.locator(".entry-head .tool-headline")).to_have_text("$ make test")
        assert "call_b1" not in pane.locator(".entry-head").inner_text()
    expect(page.locator("#entry-pane details.tool-result summary")).to_contain_text(
        "result of $ make test"
    )
    assert "call_b1" not in page.locator("#entry-pane").inner_text()

    # The share page and the HTML export: tree rows, the call card, the result's frame.
    link = sharing.create_link(session, actor=owner, leaf_pi_id=None)
    visitor = page_for(None)
    visitor.goto(f"/l/{link.token}/")
    exported = page_for(None)
    exported.set_content(page.request.get(f"/s/{session.pi_id}/export/html/").text())
    for where in (visitor, exported):
        for row in ("e0000012", "e0000013"):
            headline = where.locator(f'.rv-tree [data-entry-id="{row}"] .rv-headline')
            expect(headline).to_have_text("$ make test")
        call = where.locator('article[data-entry-id="e0000012"] .tool-call-head .tool-headline')
        expect(call).to_have_text("$ make test")
        expect(call).to_be_visible()
        result = where.locator('article[data-entry-id="e0000013"] details.tool-result summary')
        expect(result).to_contain_text("result of $ make test")
        expect(where.locator(".tool-call-meta", has_text="call_b1")).to_be_hidden()
        assert "call_b1" not in where.locator("body").inner_text()
        assert where.evaluate("() => window.__pwned") is None
        kinds = set(where.locator(".rv-kind").all_inner_texts())  # roles in words
        assert {"Tool result", "Assistant message"} <= kinds
        assert not kinds & {"toolResult", "assistant", "session_info"}

    # The Markdown export names the call a result answers; no call id anywhere.
    markdown = page.request.get(f"/s/{session.pi_id}/export/md/").text()
    assert "**Tool call** `$ make test`" in markdown
    assert "### Result of `$ make test`" in markdown
    assert "call_b1" not in markdown

    # Search results: a hit on the call and on its result read the headline.
    page.goto("/search/?q=make")
    hit = page.locator(".rv-results li", has_text="assistant")
    expect(hit.locator(".rv-headline")).to_have_text("$ make test")
    page.goto("/search/?q=passed")
    hit = page.locator(".rv-results li", has_text="toolResult")
    expect(hit.locator(".rv-headline")).to_have_text("$ make test")
    assert "call_b1" not in page.locator(".rv-results").inner_text()
    assert errors == []
