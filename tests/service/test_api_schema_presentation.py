"""The OpenAPI document served at /api/v1/openapi.json against the endpoints themselves:
every /api/v1/ route is in it with the methods it allows, the real answers of each
operation (successes and refusals) validate against the documented schema for their
status, and the push body the schema takes is what the endpoint takes (a body the
schema refuses is a 400, one it accepts is not)."""

from __future__ import annotations

import json
import re
import secrets
import uuid

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from jsonschema import Draft202012Validator

from sessions_app.services import sessions, sync_tokens
from tests.support.pi_files import chain_lines, header, line

pytestmark = pytest.mark.django_db

SID = "0199aaaa-bbbb-7ccc-8ddd-0000000000dd"
FILE = line(header(SID)) + b"".join(chain_lines(4))
CLIENT, PATH = "bob's laptop", "~/.pi/agent/sessions/--app--/schema.jsonl"
PUSH, PUSH_LINES = "/api/v1/files/push", "/api/v1/files/push.jsonl"
STATE, PENDING = "/api/v1/files/state", "/api/v1/files/pending"
EXPORT, ME, OPENAPI = (
    "/api/v1/sessions/{session_id}/export.jsonl",
    "/api/v1/me",
    "/api/v1/openapi.json",
)


def _api(user=None, token=None) -> Client:
    if token is None:
        token = sync_tokens.create_token(user, "schema")[1]
    address = f"10.8.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}", REMOTE_ADDR=address)


def _served(client) -> dict:
    response = client.get(reverse("sessions_app:api_openapi"))
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.1.")
    for schema in document["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)
    return document


def _validator(document: dict, schema: dict) -> Draft202012Validator:
    # The document is the root, so "#/components/schemas/..." resolves; its own keys
    # (openapi, info, paths...) are not JSON Schema keywords and are ignored.
    return Draft202012Validator({**document, **schema})


def _check(document: dict, template: str, method: str, response) -> None:
    """The answer is documented for its status, with its content type and schema."""
    operation = document["paths"][template][method]
    status = str(response.status_code)
    assert status in operation["responses"], f"{method} {template}: {status} not documented"
    content = operation["responses"][status]["content"]
    (kind,) = content
    assert response["Content-Type"].split(";")[0] == kind
    if kind == "application/json":
        errors = list(_validator(document, content[kind]["schema"]).iter_errors(response.json()))
        assert not errors, f"{method} {template} {status}: {[e.message for e in errors]}"


def _api_routes() -> set[str]:
    found = set()

    def walk(patterns, prefix):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                route = prefix + str(pattern.pattern)
                if route.startswith("api/v1/"):
                    found.add("/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route))

    walk(get_resolver().url_patterns, "")
    return found


def test_every_api_route_is_documented_with_the_methods_it_allows(make_user):
    client = _api(make_user())
    document = _served(client)
    assert set(document["paths"]) == _api_routes()
    for template, operations in document["paths"].items():
        url = template.replace("{session_id}", SID)
        for method in ("get", "post", "put", "delete"):
            if method in operations:
                continue
            response = getattr(client, method)(url)
            assert response.status_code == 405, (method, template)
            _check(document, template, next(iter(operations)), response)


def test_real_answers_match_the_schema(make_user, settings):
    user, other = make_user(), make_user()
    client = _api(user)
    document = _served(client)
    _check(document, OPENAPI, "get", client.get(OPENAPI))
    _check(document, ME, "get", client.get(ME))
    query = {"client": CLIENT, "path": PATH}
    missing = client.get(STATE, query)
    assert missing.status_code == 404
    _check(document, STATE, "get", missing)

    body = {**query, "offset": 0, "data": FILE[:200].decode()}
    head = FILE[: FILE.index(b"\n") + 1]
    first = client.post(PUSH, json.dumps({**body, "data": head.decode()}), "application/json")
    assert first.status_code == 200
    _check(document, PUSH, "post", first)
    rest = client.post(
        f"{PUSH_LINES}?client={CLIENT}&path={PATH}&offset={len(head)}",
        FILE[len(head) :],
        "application/x-ndjson",
    )
    assert rest.status_code == 200 and rest.json()["offset"] == len(FILE)
    _check(document, PUSH_LINES, "post", rest)
    gap = client.post(
        f"{PUSH_LINES}?client={CLIENT}&path={PATH}&offset={len(FILE) + 5}",
        b"{}\n",
        "application/x-ndjson",
    )
    assert gap.status_code == 409
    _check(document, PUSH_LINES, "post", gap)
    conflict = client.post(
        PUSH, json.dumps({**body, "offset": len(FILE) + 5, "data": "{}\n"}), "application/json"
    )
    assert conflict.status_code == 409
    _check(document, PUSH, "post", conflict)
    no_offset = client.post(
        f"{PUSH_LINES}?client={CLIENT}&path={PATH}", b"", "application/x-ndjson"
    )
    assert no_offset.status_code == 400
    _check(document, PUSH_LINES, "post", no_offset)

    session = sessions.Session.objects.get(pi_id=SID)
    sessions.append_entry(session, {"type": "session_info", "name": "from piweb"}, actor=user)
    state = client.get(STATE, query)
    assert state.status_code == 200 and len(state.json()["piweb_lines"]) == 1
    _check(document, STATE, "get", state)
    pending = client.get(PENDING, {"client": CLIENT})
    assert [f["path"] for f in pending.json()["files"]] == [PATH]
    _check(document, PENDING, "get", pending)

    export = client.get(reverse("sessions_app:api_export", args=[SID]))
    assert export.status_code == 200
    _check(document, EXPORT, "get", export)
    foreign = _api(other).get(reverse("sessions_app:api_export", args=[SID]))
    assert foreign.status_code == 404
    _check(document, EXPORT, "get", foreign)
    _check(document, ME, "get", Client(HTTP_AUTHORIZATION="Bearer pwt_no_such").get(ME))

    settings.PIWEB_SYNC_MAX_BATCH_BYTES = 10
    too_big = client.post(
        f"{PUSH_LINES}?client={CLIENT}&path={PATH}&offset={len(FILE)}",
        FILE,
        "application/x-ndjson",
    )
    assert too_big.status_code == 413
    _check(document, PUSH_LINES, "post", too_big)

    settings.PIWEB_LOGIN_FAILURE_LIMIT = 1
    address = f"10.251.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"
    Client(HTTP_AUTHORIZATION="Bearer pwt_x_y", REMOTE_ADDR=address).get(ME)
    throttled = Client(HTTP_AUTHORIZATION="Bearer pwt_x_y", REMOTE_ADDR=address).get(ME)
    assert throttled.status_code == 429
    _check(document, ME, "get", throttled)


BODIES = [
    # (what changes in a good push body, whether the schema takes it)
    ({}, True),
    ({"rewrite": False, "encoding": "utf-8", "note": "unknown fields are ignored"}, True),
    ({"offset": None}, False),
    ({"offset": "0"}, False),
    ({"offset": -1}, False),
    ({"offset": True}, False),
    ({"client": ""}, False),
    ({"client": "x" * 101}, False),
    ({"path": "p" * 4097}, False),
    ({"encoding": "latin-1"}, False),
    ({"rewrite": "yes"}, False),
    ({"data": 5}, False),
]


@pytest.mark.parametrize(("change", "valid"), BODIES, ids=lambda v: json.dumps(v)[:40])
def test_the_push_body_the_schema_takes_is_what_the_endpoint_takes(make_user, change, valid):
    client = _api(make_user())
    document = _served(client)
    body = {"client": CLIENT, "path": PATH, "offset": 0, "data": FILE.decode(), **change}
    body = {key: value for key, value in body.items() if value is not None}
    schema = document["paths"][PUSH]["post"]["requestBody"]["content"]["application/json"]
    assert _validator(document, schema["schema"]).is_valid(body) is valid
    response = client.post(PUSH, json.dumps(body), "application/json")
    assert (response.status_code != 400) is valid, response.content
    _check(document, PUSH, "post", response)
