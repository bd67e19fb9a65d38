"""Signed-in test clients, team shares and uploads through the import view: the helpers
the view and service tests share (one copy each)."""

from __future__ import annotations

import io
import uuid

from django.conf import settings
from django.test import Client
from django.urls import reverse

from sessions_app.models import SessionShare, Team, TeamMembership


def client_for(user, csrf: bool = False) -> Client:
    """A Django test client signed in as ``user``; ``csrf=True`` enforces CSRF checks as a
    browser would meet them."""
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def share(session, user, role: str) -> SessionShare:
    """Share ``session`` with ``user`` through a team of their own, as ``role``."""
    team = Team.objects.create(name=f"team-{uuid.uuid4().hex[:6]}")
    TeamMembership.objects.create(team=team, user=user)
    return SessionShare.objects.create(session=session, team=team, role=role)


def upload(client: Client, data: bytes, name: str = "upload.jsonl", htmx: bool = False):
    """POST a session file to the import view, as the upload form does."""
    fileobj = io.BytesIO(data)
    fileobj.name = name
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(reverse("sessions_app:session_import"), {"file": fileobj}, **headers)


def session_cookie_for(user) -> dict:
    """A signed-in Django session cookie for ``user`` (for websockets and the browser)."""
    name = settings.SESSION_COOKIE_NAME
    return {"name": name, "value": client_for(user).cookies[name].value}
