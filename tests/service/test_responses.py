"""One notice partial for every htmx answer, errors with their real 4xx status (htmx is
configured in base.html to swap 4xx), client events through django-htmx."""

import json
import re
import uuid

import pytest

from tests.support.branchy_session import build_branchy_session
from tests.support.tree_data import import_branched
from tests.support.web import client_for

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def _notice(response) -> str:
    """The notice's level, checking there is exactly one notice and nothing else."""
    body = response.content.decode().strip()
    found = re.fullmatch(r'<div class="notice notice-(\w+)"[^>]*>.*</div>', body, re.S)
    assert found, body
    return found.group(1)


def test_htmx_is_told_to_swap_4xx_from_a_meta_tag(make_user):
    page = client_for(make_user()).get("/").content.decode()
    content = re.search(r"<meta name=\"htmx-config\" content='([^']+)'>", page).group(1)
    rules = json.loads(content)["responseHandling"]
    assert {"code": "4..", "swap": True, "error": False} in rules
    assert rules[-1] == {"code": "...", "swap": False, "error": True}  # 5xx: not swapped


def test_refusals_in_every_area_are_the_notice_with_their_status(make_user, workspace):
    owner = make_user("notice-owner")
    session = import_branched(owner, str(workspace), session_id=str(uuid.uuid4()))
    sid = session.pi_id
    client = client_for(owner)
    cases = {
        "chat": client.post(f"/s/{sid}/chat/send/", {"text": "  "}, **HTMX),
        "tree fork": client.post(f"/s/{sid}/e/e0000014/fork/", {"scope": "all"}, **HTMX),
        "tree navigate": client.post(
            f"/s/{sid}/e/e0000016/navigate/", {"summary": "1", "old_leaf": "e000000e"}, **HTMX
        ),
        "compare summary": client.post(
            f"/s/{sid}/compare/summary/", {"a": "nope", "b": "e0000014"}, **HTMX
        ),
    }
    statuses = {where: r.status_code for where, r in cases.items()}
    assert statuses == {
        "chat": 400,
        "tree fork": 400,
        "tree navigate": 409,
        "compare summary": 400,
    }
    for where, response in cases.items():
        assert _notice(response) == "error", where
        assert "X-Piweb-Status" not in response, where
    assert json.loads(cases["tree navigate"]["HX-Trigger"])["piweb:tree-refresh"] == {
        "leaf": "e0000014",
        "entry": "e0000016",
    }
    assert 'data-code="empty"' in cases["chat"].content.decode()


def test_a_refused_compaction_goes_to_the_panels_notice_box(make_user, settings):
    from tests.support.job_sessions import SMALL, make_session

    settings.PIWEB_JOBS_QUEUE = "q-notice-tests-unconsumed"
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    response = client_for(owner).post(
        f"/s/{session.pi_id}/jobs/compact/", {"focus": "x" * 5000}, **HTMX
    )
    assert response.status_code == 400 and _notice(response) == "error"
    assert response["HX-Retarget"] == "#jobs-notice" and response["HX-Reswap"] == "innerHTML"
    # without htmx there is nothing to retarget
    plain = client_for(owner).post(f"/s/{session.pi_id}/jobs/compact/", {"focus": "x" * 5000})
    assert plain.status_code == 400 and "HX-Retarget" not in plain


def test_successes_are_the_same_partial_with_client_events(make_user, workspace):
    owner = make_user("notice-ok")
    session = import_branched(owner, str(workspace), session_id=str(uuid.uuid4()))
    client = client_for(owner)
    label = client.post(f"/s/{session.pi_id}/e/e0000011/label/", {"label": "B"}, **HTMX)
    assert label.status_code == 200 and _notice(label) == "ok"
    assert json.loads(label["HX-Trigger"]) == {"piweb:tree-refresh": {"entry": "e0000011"}}
    fork = client.post(f"/s/{session.pi_id}/e/e0000014/fork/", {"scope": "path"}, **HTMX)
    assert fork.status_code == 200 and fork["HX-Redirect"].startswith("/s/")


def test_comment_changes_trigger_their_client_event(make_user):
    data = build_branchy_session(make_user("commenter"))
    client = client_for(data.session.owner)
    added = client.post(
        f"/s/{data.session.pi_id}/review/comments/add/",
        {"entry": data.ids["a3"], "body": "Looks right"},
        **HTMX,
    )
    assert added.status_code == 200
    assert json.loads(added["HX-Trigger"]) == {"piweb:comments-changed": {}}


def test_not_found_and_forbidden_are_the_notice_for_htmx_only(make_user, workspace):
    owner, stranger = make_user("nf-owner"), make_user("nf-stranger")
    session = import_branched(owner, str(workspace), session_id=str(uuid.uuid4()))
    client = client_for(owner)
    missing = client.get(f"/s/{session.pi_id}/e/nope/", **HTMX)
    assert missing.status_code == 404 and _notice(missing) == "error"
    assert "No such entry in this session." in missing.content.decode()
    plain = client.get(f"/s/{session.pi_id}/e/nope/")
    assert plain.status_code == 404 and "notice" not in plain.content.decode()
    viewer = make_user("nf-viewer")
    from sessions_app.models import SessionShare, Team

    team = Team.objects.create(name="nf-team")
    team.members.add(viewer)
    SessionShare.objects.create(session=session, team=team, role="viewer")
    refused = client_for(viewer).post(
        f"/s/{session.pi_id}/e/e0000014/label/", {"label": "x"}, **HTMX
    )
    assert refused.status_code == 403 and _notice(refused) == "error"
    assert client_for(stranger).get(f"/s/{session.pi_id}/tree/", **HTMX).status_code == 404
