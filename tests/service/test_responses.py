"""The view gate and the one error shape (`sessions_app/responses.py`, `params.py`,
`services/errors.py`) against the real database: how a refusal is answered, how a bad
request value is refused, and that a bug is a 500, never a notice."""

import uuid

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from sessions_app import services, urls
from sessions_app.responses import session_view
from sessions_app.services.chat import RunBusy
from sessions_app.services.errors import ServiceError
from sessions_app.services.sharing import SharingError
from tests.support.tree_data import import_branched
from tests.support.web import share

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


@pytest.fixture
def broken(monkeypatch):
    """Make a service fail as a bug would: a ValueError nobody meant to raise."""

    def fail(*args, **kwargs):
        raise ValueError("an unexpected bug")

    def break_(target, name):
        monkeypatch.setattr(target, name, fail)

    return break_


@pytest.mark.parametrize("htmx", [True, False])
def test_an_unexpected_value_error_in_a_fork_is_a_500_not_a_notice(session, broken, htmx):
    from sessions_app.views import tree

    broken(tree, "fork_session")
    client = Client(raise_request_exception=False)
    client.force_login(session.owner)
    headers = HTMX if htmx else {}
    response = client.post(url("entry_fork", session, "e0000014"), {"scope": "path"}, **headers)
    assert response.status_code == 500
    assert "an unexpected bug" not in response.content.decode()


def test_an_unexpected_value_error_in_a_branch_summary_is_a_500_not_a_notice(session, broken):
    broken(services.jobs, "request_branch_summary")
    client = Client(raise_request_exception=False)
    client.force_login(session.owner)
    response = client.post(
        url("entry_navigate", session, "e000000a"),
        {"summary": "1", "old_leaf": session.leaf_pi_id},
        **HTMX,
    )
    assert response.status_code == 500
    assert "notice" not in response.content.decode()
