"""The context inspector (sessions_app/selectors/inspector.py) on pi 1.x entries: what each
context edit does, the system changes, and a compaction that restates its system message.
(That the inspector shows what the model is sent: tests/service/test_model_input.py.)"""

from __future__ import annotations

import pytest
from django.urls import reverse

from sessions_app.models import Session
from sessions_app.selectors.inspector import inspect_context
from tests.support.pi1_session import REPLACEMENT, import_pi1_session
from tests.support.pi_files import header, import_lines, message, usage_line
from tests.support.web import client_for

pytestmark = pytest.mark.django_db

SID = "11111111-2222-3333-4444-555555555555"  # the session id pi_files.header() writes


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


@pytest.mark.django_db
def test_the_inspector_of_a_session_with_a_10mb_cwd_answers_quickly(owner):
    """It answers, and small (bench/page_limits_bench.py prints how long it takes)."""
    cwd = "/" + "d" * (10 * 1024 * 1024)
    import_lines(owner, [header(SID, cwd=cwd), message("u1", None), usage_line("a1", "u1")])
    session = Session.objects.get(pi_id=SID)
    url = reverse("sessions_app:inspector", args=[session.pi_id])
    response = client_for(owner).get(url)
    assert response.status_code == 200
    assert len(response.content) < 1024 * 1024
    # the session keeps the first 4,096 characters; the header line keeps them all
    assert len(session.cwd) == 4096 and "d" * 4095 in response.content.decode()
