"""manage.py sync_token: prints a new token once, and that token works."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

from sessions_app.models import AccessToken
from sessions_app.services import sync_tokens
from tests.support.commands import run

pytestmark = pytest.mark.django_db


def test_it_prints_a_token_that_works_once(make_user):
    user = make_user()
    token = run("sync_token", user.username, "--name", "ci", "--days", "7").strip()
    assert sync_tokens.authenticate(token, "10.1.1.1") == user
    row = AccessToken.objects.get(user=user)
    assert row.name == "ci" and token not in row.digest
    again = run("sync_token", user.username, "--name", "ci").strip()
    assert again != token  # a second run makes a second token; the first is never shown


def test_it_refuses_an_unknown_user_and_a_bad_life():
    with pytest.raises(CommandError, match="No user"):
        run("sync_token", "nobody-here", "--name", "x")


def test_it_refuses_days_out_of_range(make_user):
    with pytest.raises(CommandError, match="days"):
        run("sync_token", make_user().username, "--name", "x", "--days", "0")
