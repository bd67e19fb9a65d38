"""views/sync.py: the tokens page (created and shown once, revoked, CSRF-checked, behind
the login) and the client served for download."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from sessions_app.models import AccessToken
from sessions_app.services import sync_tokens
from tests.support.web import client_for

pytestmark = pytest.mark.django_db


def test_it_requires_login():
    response = Client().get(reverse("sessions_app:sync_tokens"))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_token_is_shown_once_and_works(make_user):
    user = make_user()
    client = client_for(user)
    response = client.post(reverse("sessions_app:sync_tokens"), {"name": "laptop", "days": "7"})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    token = re.search(r'id="sync-token-value">(pwt_[^<]+)<', response.content.decode()).group(1)
    assert sync_tokens.authenticate(token, "10.3.3.3") == user
    page = client.get(reverse("sessions_app:sync_tokens")).content.decode()
    assert "laptop" in page and token not in page


def test_the_page_checks_csrf(make_user):
    client = client_for(make_user(), csrf=True)
    response = client.post(reverse("sessions_app:sync_tokens"), {"name": "laptop"})
    assert response.status_code == 403
    assert not AccessToken.objects.exists()


def test_a_user_revokes_only_their_own_tokens(make_user):
    owner, other = make_user(), make_user()
    row, _token = sync_tokens.create_token(owner, "laptop")
    url = reverse("sessions_app:sync_token_revoke", args=[row.pk])
    client_for(other).post(url)
    assert AccessToken.objects.get(pk=row.pk).revoked_at is None
    client_for(owner).post(url)
    assert AccessToken.objects.get(pk=row.pk).revoked_at is not None


def test_the_client_is_served_as_it_is_in_the_repository():
    response = Client().get(reverse("sessions_app:sync_client"))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="piweb_sync.py"'
    assert response.content == (settings.BASE_DIR / "piweb_sync.py").read_bytes()
