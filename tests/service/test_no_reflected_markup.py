"""Error responses never echo what was sent as HTML.

Every error path a person can reach with their own input (URL segments, query and form
fields) is hit with markup payloads: a response that is HTML must carry them escaped,
and the plain-text errors (exports, link exports, compare summary) must be text/plain
with nosniff, so no browser renders them. A `<meta http-equiv=refresh>` sent a browser
to another site before, which the Content-Security-Policy does not stop.
"""

from urllib.parse import quote

import pytest
from django.test import Client

from sessions_app.services import comments, sharing
from tests.support.branchy_session import build_branchy_session

pytestmark = pytest.mark.django_db

# No "/" inside (they also travel as one URL path segment).
PAYLOADS = (
    "<meta http-equiv=refresh content=0;url=https:evil.test>",
    "<img src=x onerror=alert(1)>",
)


def assert_not_markup(response, payload, where):
    body = response.content.decode(errors="replace") if not response.streaming else ""
    kind = response.get("Content-Type", "")
    if kind.startswith("text/html"):
        assert payload not in body, (where, response.status_code)
    else:
        assert kind.startswith(("text/plain", "application/json")), (where, kind)
        assert response.get("X-Content-Type-Options") == "nosniff", where


@pytest.fixture
def world(make_user):
    owner = make_user("owner")
    data = build_branchy_session(owner)
    link = sharing.create_link(data.session, actor=owner, leaf_pi_id=data.ids["a3"])
    comment = comments.add_comment(data.session, data.ids["a3"], owner, "c")
    client = Client()
    client.force_login(owner)
    return data, link, comment, client


@pytest.mark.parametrize("payload", PAYLOADS)
def test_export_and_compare_errors_are_plain_text(world, payload):
    data, link, _, client = world
    sid, seg = data.session.pi_id, quote(payload, safe="")
    cases = {
        "link export, logged out": Client().get(f"/l/{link.token}/export/{seg}/"),
        "session export format": client.get(f"/s/{sid}/export/{seg}/"),
        "html ?leaf=": client.get(f"/s/{sid}/export/html/", {"leaf": payload}),
        "md ?leaf=": client.get(f"/s/{sid}/export/md/", {"leaf": payload}),
        "compare summary a=": client.post(
            f"/s/{sid}/compare/summary/", {"a": payload, "b": data.ids["b3"]}
        ),
    }
    for where, response in cases.items():
        assert response.status_code == 400, where
        assert response["Content-Type"].startswith("text/plain"), where
        assert response["X-Content-Type-Options"] == "nosniff", where
    # an HTMX caller gets an escaped fragment it can swap in
    htmx = client.post(
        f"/s/{sid}/compare/summary/", {"a": payload, "b": "x"}, HTTP_HX_REQUEST="true"
    )
    assert htmx.status_code == 400 and htmx["Content-Type"].startswith("text/html")
    assert payload not in htmx.content.decode() and "&lt;" in htmx.content.decode()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_every_other_error_path_escapes_its_input(world, payload):
    data, link, comment, client = world
    sid, seg, eid = data.session.pi_id, quote(payload, safe=""), data.ids["a3"]
    anonymous = Client()
    gets = [
        (client, f"/s/{seg}/", {}),
        (client, f"/s/{sid}/", {"leaf": payload, "target": payload, "filter": payload}),
        (client, f"/s/{sid}/tree/", {"q": payload, "open": payload}),
        (client, f"/s/{sid}/tree/branch/{seg}/", {"depth": payload}),
        (client, f"/s/{sid}/tree/run/{seg}/{seg}/", {}),
        (client, f"/s/{sid}/e/{seg}/", {}),
        (client, f"/s/{sid}/e/{eid}/", {"leaf": payload}),
        (client, f"/s/{sid}/e/{eid}/text/", {"from": payload}),
        (client, f"/s/{sid}/e/{seg}/raw/", {}),
        (client, f"/s/{sid}/e/{seg}/output/", {}),
        (client, f"/s/{sid}/inspect/", {"leaf": payload}),
        (client, f"/s/{sid}/compare/", {"a": payload, "b": payload}),
        (client, f"/s/{sid}/review/comments/", {"entry": payload}),
        (client, f"/s/{sid}/sharing/", {"leaf": payload, "target": payload}),
        (client, f"/s/{sid}/compare/summary/00000000-0000-0000-0000-000000000000/", {}),
        (client, "/search/", {"q": payload, "role": payload, "from": payload, "to": payload}),
        (client, "/", {"q": payload, "source": payload, "page": payload}),
        (anonymous, f"/l/{seg}/", {}),
        (anonymous, f"/l/{link.token}/", {"leaf": payload}),
        (anonymous, f"/l/{link.token}/", {"target": payload}),
        (anonymous, f"/l/{link.token}/export/md/", {"leaf": payload}),
    ]
    for who, url, params in gets:
        response = who.get(url, params)
        assert response.status_code < 500, url
        assert_not_markup(response, payload, url)
    posts = [
        (f"/s/{sid}/review/comments/add/", {"entry": payload, "body": payload}),
        (f"/s/{sid}/review/comments/add/", {"entry": eid, "body": "x", "reply_to": payload}),
        (f"/s/{sid}/review/comments/{comment.pk}/resolve/", {"from": payload}),
        (f"/s/{sid}/sharing/link/", {"leaf": payload}),
        (f"/s/{sid}/sharing/link/", {"leaf": eid, "target": payload}),
        (f"/s/{sid}/sharing/link/", {"leaf": eid, "expires_in_days": payload}),
        (f"/s/{sid}/sharing/link/", {"leaf": eid, "scope": payload}),
        (f"/s/{sid}/sharing/team/", {"team": payload, "role": payload}),
        (f"/s/{sid}/e/{eid}/fork/", {"scope": payload}),
        (f"/s/{sid}/e/{eid}/navigate/", {"summary": "1", "old_leaf": payload}),
        (f"/s/{sid}/e/{eid}/label/", {"label": payload}),
        (f"/s/{sid}/chat/model/", {"profile": payload}),
        (f"/s/{sid}/jobs/settings/", {"reserve_tokens": payload, "keep_recent_tokens": payload}),
        ("/new/", {"cwd": payload, "name": payload, "model_profile": payload}),
    ]
    for url, form in posts:
        for htmx in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = client.post(url, form, **htmx)
            assert response.status_code < 500, url
            assert_not_markup(response, payload, url)
