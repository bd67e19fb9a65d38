"""Signed-in test clients, team shares and uploads through the import view: the helpers
the view and service tests share (one copy each)."""

from __future__ import annotations

import io
import uuid

from django.conf import settings
from django.test import Client
from django.urls import reverse

from sessions_app.models import SessionShare, Team, TeamMembership
from tests.support.processes import SERVER_UPLOAD_LIMIT  # noqa: F401 (the tests' name for it)


def client_for(user, csrf: bool = False) -> Client:
    """A Django test client signed in as ``user``; ``csrf=True`` enforces CSRF checks as a
    browser would meet them."""
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def share(session, user, role: str) -> SessionShare:
    """Share ``session`` with ``user`` through a team of their own, as ``role`` (their team
    role matches: a team editor on a viewer share would also score, as a reviewer)."""
    team = Team.objects.create(name=f"team-{uuid.uuid4().hex[:6]}")
    TeamMembership.objects.create(team=team, user=user, role=role)
    return SessionShare.objects.create(session=session, team=team, role=role)


def upload(client: Client, data: bytes, name: str = "upload.jsonl", htmx: bool = False):
    """POST a session file to the import view, as the upload form does, and return the
    page that shows the import's outcome (see ``post_import``)."""
    fileobj = io.BytesIO(data)
    fileobj.name = name
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return post_import(client, {"file": fileobj}, **headers)


def post_import(client: Client, form: dict, **headers):
    """POST ``form`` to the import view. An accepted upload (202) is an import job: run it
    here as the worker does (``run_job``; a live worker may have taken it: then wait for
    it), and return the job's status page, which shows the report or the error. A refused
    upload's response is returned as it is."""
    from sessions_app.models import Job
    from sessions_app.services.jobs import run_job
    from tests.support.waiting import wait_until

    response = client.post(reverse("sessions_app:session_import"), form, **headers)
    if response.status_code != 202:
        return response
    job_id = response["Location"].rstrip("/").rsplit("/", 1)[-1]
    run_job(job_id)
    assert wait_until(lambda: Job.objects.get(pk=job_id).status not in Job.ACTIVE, timeout=60)
    # A crash in the importer fails the job with "Internal error: …" (it was a 500 before):
    # never an acceptable answer to any file.
    assert not Job.objects.get(pk=job_id).error.startswith("Internal error"), Job.objects.get(
        pk=job_id
    ).error
    return client.get(response["Location"], **headers)


def session_cookie_for(user) -> dict:
    """A signed-in Django session cookie for ``user`` (for websockets and the browser)."""
    name = settings.SESSION_COOKIE_NAME
    return {"name": name, "value": client_for(user).cookies[name].value}
