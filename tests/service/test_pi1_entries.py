"""pi 1.x entries outside the core: the context inspector, search and the tree rows."""

from __future__ import annotations

import pytest
from django.urls import reverse

from sessions_app.services import search
from sessions_app.services.inspector import inspect_context
from tests.support.pi1_session import REPLACEMENT, import_pi1_session
from tests.support.web import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(make_user):
    return make_user("pi1-owner")


@pytest.fixture
def session(owner):
    return import_pi1_session(owner)


@pytest.mark.embedded
def test_inspector_lists_what_each_edit_does_and_the_system_changes(session):
    report = inspect_context(session, "b0000004")
    edits = {e["id"]: e for e in report.edits}
    assert set(edits) == {"b00000e1", "b00000e2", "b00000e3"}
    assert edits["b00000e3"]["action"] == "replaced" and edits["b00000e3"]["status"] == "applied"
    assert edits["b00000e3"]["target"] == "b0000003"
    assert edits["b00000e3"]["target_role"] == "toolResult"
    assert edits["b00000e3"]["replacement"] == REPLACEMENT
    assert edits["b00000e2"]["action"] == "dropped" and edits["b00000e2"]["status"] == "applied"
    assert edits["b00000e2"]["target_preview"] == "Find the flaky test"
    assert edits["b00000e1"]["status"] == "overridden by a later edit"
    [system] = report.system_changes
    assert system["id"] == "b00000s1" and system["content"] == "You may now lint files."
    assert system["sections"] == [("rules", "<rules>Always run the quokka linter</rules>")]
    assert [t["name"] for t in system["tools_added"]] == ["lint"]
    assert [t["name"] for t in system["tools_removed"]] == ["grep"]

    # Before the edits, nothing is edited; an edit off the path changes nothing.
    assert inspect_context(session, "b00000s1").edits == []
    early = inspect_context(session, "b00000e1")
    assert [(e["id"], e["status"]) for e in early.edits] == [("b00000e1", "applied")]


@pytest.mark.embedded
def test_a_pi1_compaction_keeping_nothing_restates_its_system_message(session, owner):
    report = inspect_context(session, "b0000005")
    assert [h["id"] for h in report.hidden] == ["b0000001", "b0000002"]
    [restated] = report.system_changes
    assert restated["id"] == "b00000c1" and restated["entry_type"] == "compaction"
    assert restated["sections"] == [("rules", "<rules>Restated rules</rules>")]
    pane = (
        client_for(owner)
        .get(reverse("sessions_app:entry_pane", args=[session.pi_id, "b00000c1"]))
        .content.decode()
    )
    assert "keeps nothing before it" in pane
    assert "System message (re-stated)" in pane and "Restated prompt" in pane
    assert "Usage of the summary call" in pane and "$0.0081" in pane
    pane = (
        client_for(owner)
        .get(reverse("sessions_app:entry_pane", args=[session.pi_id, "b0000003"]))
        .content.decode()
    )
    assert "usage-table" in pane  # a tool result's own usage (pi 1.x)


@pytest.mark.embedded
def test_inspector_page_shows_edits_and_system_changes(session, owner):
    url = reverse("sessions_app:inspector", args=[session.pi_id]) + "?leaf=b0000004"
    html = client_for(owner).get(url).content.decode()
    assert "3 context edits on this path" in html
    assert "overridden by a later edit" in html
    assert 'class="ctx-edit edit-dropped"' in html and "Find the flaky test" in html
    assert "section rules" in html and "&lt;rules&gt;Always run the quokka linter" in html
    assert "<code>+lint</code>" in html and "<code>-grep</code>" in html


@pytest.mark.embedded
def test_search_finds_the_text_of_new_entry_types(session, owner):
    def hit_ids(query):
        return {h.entry_pi_id for h in search.search(owner, query).hits}

    assert "b00000e3" in hit_ids("zebra")  # a context edit's replacement text
    assert "b00000s1" in hit_ids("quokka")  # a system message's section
    assert "b00000s1" in hit_ids("lint")  # … and the tools it adds
    assert "b00000u1" in hit_ids("summarizing")  # a usage entry's note
    assert "b00000x1" in hit_ids("octopus")  # an unknown entry type's strings


@pytest.mark.embedded
def test_tree_rows_name_each_new_type(session, owner):
    url = reverse("sessions_app:session_detail", args=[session.pi_id])
    # As in pi 1.6.0's tree, the default filter leaves usage and context edits out.
    html = client_for(owner).get(url).content.decode()
    assert 'id="n-b00000s1"' in html and 'id="n-b00000x1"' in html
    assert 'id="n-b00000u1"' not in html and 'id="n-b00000e2"' not in html
    html = client_for(owner).get(url + "?filter=all").content.decode()

    def row(entry_id):
        start = html.index(f'id="n-{entry_id}"')
        return html[html.rindex("<div", 0, start) : html.index("</div>", start)]

    assert "k-usage" in row("b00000u1") and "<b>usage</b>" in row("b00000u1")
    assert "k-context_edit" in row("b00000e2") and "<b>context edit</b>" in row("b00000e2")
    assert "drops b0000001" in row("b00000e2")
    assert "k-system" in row("b00000s1") and "<b>system</b>" in row("b00000s1")
    assert "k-hologram" in row("b00000x1") and "<b>hologram</b>" in row("b00000x1")
