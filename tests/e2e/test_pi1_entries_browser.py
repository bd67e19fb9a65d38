"""pi 1.x entries in headless Chromium: the tree and the entry pane show usage,
context_edit and system messages each in their own way, an unknown entry type shows its
name and JSON, and the inspector lists the edits and system changes."""

import pytest

from tests.support.pi1_session import REPLACEMENT, USAGE_NOTE, import_pi1_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_entry(page, entry_id):
    page.click(f"#n-{entry_id} .preview")
    page.wait_for_selector(f'#entry-pane [data-entry="{entry_id}"]')
    return page.locator("#entry-pane")


def test_usage_context_edit_system_and_unknown_entries_render(page_for, make_user):
    owner = make_user("pi1-browser")
    session = import_pi1_session(owner)
    page = page_for(owner)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"/s/{session.pi_id}/?filter=all")  # the default filter hides usage and edits
    page.wait_for_selector("#n-b0000004.session-leaf")

    # The tree: each type has its own icon and names itself.
    for entry_id, kind, icon, prefix in (
        ("b00000u1", "usage", "¢", "usage"),
        ("b00000e3", "context_edit", "✎", "context edit"),
        ("b00000s1", "system", "S", "system"),
        ("b00000x1", "hologram", "?", "hologram"),
    ):
        row = page.locator(f"#n-{entry_id}.k-{kind}")
        assert row.count() == 1, entry_id
        assert row.locator(".icon").inner_text() == icon
        assert row.locator(".preview b").inner_text() == prefix
    assert "drops b0000001" in page.inner_text("#n-b00000e2 .preview")

    # Usage: the figures in a table, the note, nothing about the context.
    pane = open_entry(page, "b00000u1")
    table = pane.locator(".usage-table")
    assert table.locator("td").all_inner_texts() == ["1200", "300", "0", "0", "1500", "$0.0081"]
    assert USAGE_NOTE in pane.inner_text()
    assert "anthropic/claude-haiku-4-5" in pane.inner_text()

    # A replacing edit links to its target and shows the new content; a dropping one says so.
    pane = open_entry(page, "b00000e3")
    box = pane.locator(".edit-box.edit-replaced")
    assert "replaces the content of b0000003" in box.inner_text()
    assert REPLACEMENT in box.locator(".edit-replacement").inner_text()
    pane.locator('.edit-box a.goto[data-id="b0000003"]').click()
    pane = open_entry(page, "b00000e2")
    assert "drops b0000001 from the model's context" in pane.locator(".edit-dropped").inner_text()

    # A system message: the prompt text, its sections (escaped), the tool changes.
    pane = open_entry(page, "b00000s1")
    box = pane.locator(".system-box")
    assert "You may now lint files." in box.inner_text()
    assert (
        "<rules>Always run the quokka linter</rules>" in box.locator(".system-section").inner_text()
    )
    assert box.locator(".tools-added").inner_text().count("+lint") == 1
    assert "-grep" in box.locator(".tools-removed").inner_text()

    # An entry type newer than piweb: its type and its JSON.
    pane = open_entry(page, "b00000x1")
    assert "hologram" in pane.locator("strong").first.inner_text()
    assert '"beam": "violet-octopus"' in pane.locator(".json-view").inner_text()

    # The inspector at the leaf: the edits and the system changes.
    open_entry(page, "b0000004")
    page.click("#entry-pane button:has-text('Inspect context here')")
    page.wait_for_selector("#inspector-pane .ctx-edits")
    edits = page.inner_text("#inspector-pane .ctx-edits")
    assert "3 context edits on this path" in edits and "overridden by a later edit" in edits
    changes = page.inner_text("#inspector-pane .ctx-system-changes")
    assert "+lint" in changes and "-grep" in changes and "section rules" in changes
    assert errors == []
