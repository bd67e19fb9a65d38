"""One renderer for entry parts (issue 27): the chat, the entry pane, the share page and
the HTML export show the same session's usage, context edit, system message, tool call,
tool result and unknown entry through the same frames (templates/sessions_app/parts/),
the chat with tool calls and results folded."""

import pytest
from playwright.sync_api import expect

from sessions_app.services import sharing
from tests.support.browser import collect_errors
from tests.support.pi1_session import REPLACEMENT, USAGE_NOTE, import_pi1_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FRAMES = {
    ".usage-box": USAGE_NOTE,
    ".edit-box.edit-replaced": REPLACEMENT,
    ".system-box": "quokka",
    "details.tool-call": "read",
    "details.tool-result": "read",
}


def frames_in(scope):
    """Each frame's text (joined over its occurrences) in a locator's scope."""
    return {sel: " ".join(scope.locator(sel).all_text_contents()) for sel in FRAMES}


def assert_frames(texts, where):
    for sel, needle in FRAMES.items():
        assert needle in texts[sel], f"{where}: {sel} lacks {needle!r}: {texts[sel][:200]!r}"


def test_chat_entry_pane_share_page_and_export_render_parts_alike(page_for, make_user):
    owner = make_user("one-renderer")
    session = import_pi1_session(owner)
    page = page_for(owner)
    errors = collect_errors(page)
    page.goto(f"/s/{session.pi_id}/?filter=all")
    page.wait_for_selector("#n-b0000004.session-leaf")

    # The chat: every frame, tool calls and results folded.
    chat = page.locator("#chat-transcript")
    assert_frames(frames_in(chat), "chat")
    assert chat.locator("details.tool-call[open], details.tool-result[open]").count() == 0

    # The entry pane, one node at a time, with the same frames (open there).
    seen = {}
    for entry_id in ("b00000u1", "b00000e3", "b00000s1", "b0000002", "b0000003"):
        page.click(f"#n-{entry_id} .preview")
        page.wait_for_selector(f'#entry-pane [data-entry="{entry_id}"]')
        for sel, text in frames_in(page.locator("#entry-pane")).items():
            seen[sel] = seen.get(sel, "") + " " + text
    assert_frames(seen, "entry pane")
    page.click("#n-b0000002 .preview")
    expect(page.locator("#entry-pane details.tool-call[open]")).to_have_count(1)

    # The share page (a link to the whole branch) and the HTML export.
    link = sharing.create_link(session, actor=owner, leaf_pi_id=None)
    visitor = page_for(None)
    visitor.goto(f"/l/{link.token}/")
    assert_frames(frames_in(visitor.locator("body")), "share page")
    # (the export is a download: its HTML, opened on its own)
    html = page.request.get(f"/s/{session.pi_id}/export/html/").text()
    exported = page_for(None)
    exported.set_content(html)
    assert_frames(frames_in(exported.locator("body")), "export")
    assert not errors, errors
