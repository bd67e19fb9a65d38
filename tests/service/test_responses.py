"""The view gate and the one error shape (`sessions_app/responses.py`, `params.py`,
`core/errors.py`) against the real database: how a refusal is answered, how a bad
request value is refused, and that a bug is a 500, never a notice; and the one notice
partial for every htmx answer (errors with their real 4xx status, which htmx is configured
in base.html to swap; client events through django-htmx)."""

import json
import re
import uuid

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from sessions_app import urls
from sessions_app.core.errors import ServiceError
from sessions_app.responses import session_view
from sessions_app.services.chat import RunBusy
from sessions_app.services.sharing import SharingError
from tests.support.branchy_session import build_branchy_session
from tests.support.tree_data import import_branched
from tests.support.web import client_for, share

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def owner(make_user):
    return make_user("owner")


@pytest.fixture
def session(owner, workspace):
    return import_branched(owner, str(workspace), session_id=str(uuid.uuid4()))


def url(name, session, *args):
    return reverse(f"sessions_app:{name}", args=[session.pi_id, *args])


# --- the error shape ----------------------------------------------------------------------


def test_a_service_error_carries_its_status_and_code():
    assert (RunBusy("busy").status, RunBusy("busy").code) == (409, "busy")
    refused = SharingError("No such link on this session.", 404)
    assert (refused.status, refused.code, str(refused)) == (
        404,
        "sharing",
        "No such link on this session.",
    )
    assert ServiceError("x").status == 400


def test_a_status_that_is_not_a_number_is_a_programming_error():
    with pytest.raises(TypeError):
        ServiceError("Give a command.", "empty")


def test_the_gate_knows_only_the_rights_of_the_access_model():
    with pytest.raises(ValueError, match="Unknown need"):
        session_view("admin")


def test_every_route_of_the_app_goes_through_the_gate():
    ungated = [
        pattern.name
        for pattern in urls.urlpatterns
        if isinstance(pattern, URLPattern) and not hasattr(pattern.callback, "piweb_gate")
    ]
    assert ungated == []


# --- how a refusal is answered --------------------------------------------------------------


def test_a_refusal_is_the_error_notice_for_htmx_with_its_status_and_code(session, client_for):
    client = client_for(session.owner)
    response = client.post(url("compare_summary", session), {"a": "nope", "b": "e0000014"}, **HTMX)
    assert response.status_code == 400
    html = response.content.decode()
    assert 'class="notice notice-error"' in html and 'data-code="compare"' in html


def test_a_refusal_is_plain_text_without_htmx(session, client_for):
    client = client_for(session.owner)
    response = client.post(url("compare_summary", session), {"a": "nope", "b": "e0000014"})
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    assert "notice" not in response.content.decode()


def test_a_not_found_refusal_is_a_404_page_without_htmx_and_a_notice_with(session, client_for):
    client = client_for(session.owner)
    plain = client.post(url("sharing_link_revoke", session, 999999))
    assert plain.status_code == 404 and "notice" not in plain.content.decode()
    notice = client.post(url("sharing_link_revoke", session, 999999), **HTMX)
    assert notice.status_code == 404
    assert "No such link on this session." in notice.content.decode()


def test_a_notice_view_answers_a_refusal_with_the_notice_without_htmx_too(session, client_for):
    response = client_for(session.owner).post(url("chat_send", session), {"text": "  "})
    assert response.status_code == 400
    assert 'data-code="empty"' in response.content.decode()


def test_the_gate_refuses_a_viewer_an_editor_action_and_a_stranger_the_session(
    session, make_user, client_for
):
    viewer, stranger = make_user("viewer"), make_user("stranger")
    share(session, viewer, "viewer")
    target = url("entry_label", session, "e0000014")
    assert client_for(viewer).post(target, {"label": "x"}, **HTMX).status_code == 403
    assert client_for(stranger).post(target, {"label": "x"}, **HTMX).status_code == 404
    assert client_for(viewer).get(target).status_code == 405


# --- typed request values --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("route", "args", "field"),
    [
        ("tree_children", ("e000000a",), "start"),
        ("entry_text", ("e0000014",), "from"),
        ("tree_branch", ("e0000b51",), "depth"),
    ],
)
def test_a_number_that_is_not_one_is_a_400_naming_the_field(
    session, client_for, route, args, field
):
    response = client_for(session.owner).get(url(route, session, *args), {field: "abc"})
    assert response.status_code == 400
    assert response.content.decode().startswith(f"{field}: expected a whole number")


def test_a_reply_to_that_is_not_a_comment_number_is_refused_not_posted_as_a_thread(
    session, client_for
):
    response = client_for(session.owner).post(
        url("review_comment_add", session), {"entry": "e0000014", "body": "hi", "reply_to": "x1"}
    )
    assert response.status_code == 400
    assert "reply_to" in response.content.decode()
    assert not session.comments.exists()


def test_an_unknown_choice_is_refused_with_its_message(session, client_for):
    response = client_for(session.owner).post(
        url("entry_fork", session, "e0000014"), {"scope": "everything"}, **HTMX
    )
    assert response.status_code == 400
    assert "Unknown fork scope." in response.content.decode()


# --- a bug is a 500 ----------------------------------------------------------------------------


def corrupt(session, *pi_ids: str) -> None:
    """A real fault: stored entries whose line is no longer JSON (a damaged row), so the
    service that parses them fails with the ValueError (a JSONDecodeError) a bug would
    raise, one nobody meant to refuse with a notice."""
    from sessions_app.models import Entry

    assert Entry.objects.filter(session=session, pi_id__in=pi_ids).update(
        line='{"an unexpected bug'
    ) == len(pi_ids)


@pytest.mark.parametrize("htmx", [True, False])
def test_an_unexpected_value_error_in_a_fork_is_a_500_not_a_notice(session, htmx):
    # A path fork copies rows as they are; it parses the path's root (pi re-chains it).
    corrupt(session, "e0000001")
    client = Client(raise_request_exception=False)
    client.force_login(session.owner)
    headers = HTMX if htmx else {}
    response = client.post(url("entry_fork", session, "e0000014"), {"scope": "path"}, **headers)
    assert response.status_code == 500
    assert "an unexpected bug" not in response.content.decode()


def test_an_unexpected_value_error_in_a_branch_summary_is_a_500_not_a_notice(session):
    corrupt(session, "e000000a", session.leaf_pi_id)
    client = Client(raise_request_exception=False)
    client.force_login(session.owner)
    response = client.post(
        url("entry_navigate", session, "e000000a"),
        {"summary": "1", "old_leaf": session.leaf_pi_id},
        **HTMX,
    )
    assert response.status_code == 500
    assert "notice" not in response.content.decode()


# --- the notice partial -------------------------------------------------------------------


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
