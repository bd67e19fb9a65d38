"""The export view (sessions_app/views/exports.py): who may export a session, and the
download each format gives. The exports themselves are tested in
test_exports_presentation.py."""

from __future__ import annotations

import json

import pytest

from tests.support.access import Call, each, login_redirects, statuses
from tests.support.branchy_session import build_branchy_session
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db]

READS = [Call("export", args=("md",))]


def test_it_requires_login(shared):
    assert login_redirects(READS, shared.session) == each(READS, "/login/")


def test_it_requires_a_share_of_the_session(shared):
    strangers = statuses(client_for(shared.stranger), READS, shared.session)
    assert strangers == each(READS, 404)
    assert statuses(client_for(shared.viewer), READS, shared.session) == each(READS, 200)


def test_an_export_is_recorded_as_activity_and_a_refused_one_is_not(shared):
    from django.urls import reverse

    from sessions_app.models import Activity

    session = shared.session
    viewer = client_for(shared.viewer)
    url = reverse("sessions_app:export", args=[session.pi_id, "md"])
    assert viewer.get(url).status_code == 200
    assert viewer.get(url + "?leaf=no-such-entry").status_code == 400
    assert (
        viewer.get(reverse("sessions_app:export", args=[session.pi_id, "pdf"])).status_code == 400
    )
    exported = Activity.objects.filter(session=session, verb="exported")
    assert [(a.actor, a.details) for a in exported] == [
        (shared.viewer, {"format": "md", "leaf": None})
    ]


def test_export_views(client, make_user):
    owner = make_user()
    data = build_branchy_session(owner)
    client.force_login(owner)
    base = f"/s/{data.session.pi_id}/export/"
    html = client.get(base + "html/", {"leaf": data.ids["a3"]})
    assert html.status_code == 200
    assert html["Content-Disposition"].startswith("attachment;")
    assert html["Content-Type"].startswith("text/html")
    jsonl = client.get(base + "jsonl/")
    assert jsonl.streaming  # never the whole file in memory
    first = json.loads(b"".join(jsonl.streaming_content).decode().splitlines()[0])
    assert first["type"] == "session" and first["id"] == data.session.pi_id
    assert client.get(base + "pdf/").status_code == 400
    assert client.get(base + "md/", {"leaf": "zzz"}).status_code == 400
