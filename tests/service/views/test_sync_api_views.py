"""views/sync_api.py through the token gate: JSON in and out, 401 without a good token,
429 after too many bad ones, another user's files and sessions 404, 409 naming the
server's offset, a token that cannot open the pages, and CSRF only for the pages."""

from __future__ import annotations

import json
import secrets
import uuid
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app.services import sessions, sync_tokens
from tests.support.pi_files import chain_lines, header, line

pytestmark = pytest.mark.django_db

SID = "0199aaaa-bbbb-7ccc-8ddd-0000000000cc"
FILE = line(header(SID)) + b"".join(chain_lines(4))
CLIENT, PATH = "alice's laptop", "~/.pi/agent/sessions/--app--/s.jsonl"


def _api(user=None, token=None) -> Client:
    if token is None:
        token = sync_tokens.create_token(user, "test")[1]
    address = f"10.7.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"
    return Client(
        enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {token}", REMOTE_ADDR=address
    )


def _push(client, offset, data, **extra):
    body = {"client": CLIENT, "path": PATH, "offset": offset, "data": data.decode(), **extra}
    return client.post(reverse("sessions_app:api_push"), json.dumps(body), "application/json")


def _state(client):
    return client.get(reverse("sessions_app:api_file_state"), {"client": CLIENT, "path": PATH})


def test_it_requires_a_token(make_user):
    for client in (Client(), _api(token="pwt_abc_def")):
        response = _push(client, 0, FILE)
        assert response.status_code == 401
        assert response.json()["code"] == "token"
        assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_push_answers_json_and_the_same_push_twice_changes_nothing(make_user):
    client = _api(make_user())
    first = _push(client, 0, FILE)
    assert first.status_code == 200, first.content
    assert first.json() == {
        "client": CLIENT,
        "path": PATH,
        "offset": len(FILE),
        "lines": 5,
        "session": SID,
        "url": reverse("sessions_app:session_detail", args=[SID]),
        "pending": 0,
    }
    assert _push(client, 0, FILE).json() == first.json()


def test_a_gap_is_409_naming_the_servers_offset(make_user):
    client = _api(make_user())
    _push(client, 0, FILE)
    response = _push(client, len(FILE) + 10, chain_lines(1, 4)[0])
    assert response.status_code == 409
    assert response.json()["offset"] == len(FILE)


def test_base64_data_is_taken_like_text(make_user):
    import base64

    client = _api(make_user())
    response = _push(client, 0, base64.b64encode(FILE), encoding="base64")
    assert response.status_code == 200
    assert response.json()["offset"] == len(FILE)


def test_bad_bodies_are_400_and_too_big_ones_413(make_user, settings):
    client = _api(make_user())
    url = reverse("sessions_app:api_push")
    assert client.post(url, "[1]", "application/json").status_code == 400
    assert client.post(url, "not json", "application/json").status_code == 400
    assert _push(client, "0", FILE).status_code == 400
    settings.PIWEB_SYNC_MAX_BATCH_BYTES = 100
    assert _push(client, 0, FILE).status_code == 413


def test_piweb_lines_are_read_back_until_written(make_user):
    user = make_user()
    client = _api(user)
    assert _state(client).status_code == 404
    _push(client, 0, FILE)
    session = sessions.Session.objects.get(pi_id=SID)
    entry = sessions.append_entry(session, {"type": "session_info", "name": "x"}, actor=user)
    state = _state(client).json()
    assert state["piweb_lines"] == [{"id": entry.pi_id, "line": entry.line}]
    pending = client.get(reverse("sessions_app:api_pending"), {"client": CLIENT}).json()
    assert [f["path"] for f in pending["files"]] == [PATH]
    _push(client, len(FILE), (entry.line + "\n").encode())
    assert _state(client).json()["piweb_lines"] == []


def test_a_token_reaches_only_its_owners_files_and_sessions(make_user):
    alice, bob = make_user(), make_user()
    alice_client, bob_client = _api(alice), _api(bob)
    _push(alice_client, 0, FILE)
    assert _state(bob_client).status_code == 404
    export = reverse("sessions_app:api_export", args=[SID])
    assert bob_client.get(export).status_code == 404
    response = alice_client.get(export)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == FILE
    # bob sending a file with alice's session id gets no part of her session
    response = _push(bob_client, 0, FILE)
    assert response.status_code == 400
    assert sessions.Session.objects.get(pi_id=SID).owner == alice


def test_a_token_cannot_log_in_to_the_pages(make_user):
    client = _api(make_user())
    response = client.get(reverse("sessions_app:session_list"))
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert client.get(reverse("sessions_app:sync_tokens")).status_code == 302


def test_too_many_bad_tokens_from_one_address_get_429(make_user, settings):
    settings.PIWEB_LOGIN_FAILURE_LIMIT = 2
    good = sync_tokens.create_token(make_user(), "t")[1]
    # An address of its own each run: the counter lives in Redis past the test.
    headers = {"REMOTE_ADDR": f"10.250.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"}
    for _ in range(2):
        assert (
            Client(HTTP_AUTHORIZATION="Bearer pwt_x_y", **headers)
            .get(reverse("sessions_app:api_whoami"))
            .status_code
            == 401
        )
    response = Client(HTTP_AUTHORIZATION=f"Bearer {good}", **headers).get(
        reverse("sessions_app:api_whoami")
    )
    assert response.status_code == 429


def test_only_its_methods_are_allowed(make_user):
    client = _api(make_user())
    assert client.get(reverse("sessions_app:api_push")).status_code == 405


def _push_lines(client, offset, data, **params):
    url = reverse("sessions_app:api_push_lines")
    query = urlencode({"client": CLIENT, "path": PATH, "offset": offset, **params})
    return client.post(f"{url}?{query}", data, "application/x-ndjson")


def test_lines_sent_as_the_body_follow_the_same_rules(make_user):
    client = _api(make_user())
    head = FILE[: FILE.index(b"\n") + 1]
    assert _push_lines(client, 0, head).json()["offset"] == len(head)
    whole = _push_lines(client, 0, FILE)  # the part held is compared, the rest appended
    assert whole.status_code == 200 and whole.json()["offset"] == len(FILE)
    assert _push_lines(client, 0, FILE).json() == whole.json()  # the same batch: nothing
    different = FILE.replace(b'"text":"', b'"text":"changed ', 1)
    assert different != FILE
    conflict = _push_lines(client, 0, different)
    assert conflict.status_code == 409 and conflict.json()["offset"] == len(FILE)
    assert _push_lines(client, len(FILE) + 1, b"{}\n").json()["offset"] == len(FILE)
    assert _push_lines(client, 0, FILE, rewrite="true").json()["offset"] == len(FILE)
    assert _push_lines(client, "", FILE).status_code == 400
    assert _push_lines(client, 0, FILE[:-1], rewrite="true").status_code == 400  # no newline
    export = client.get(reverse("sessions_app:api_export", args=[SID]))
    assert b"".join(export.streaming_content) == FILE
