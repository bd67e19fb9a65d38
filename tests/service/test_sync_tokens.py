"""services/sync_tokens.py: tokens stored hashed and shown once, revoked, expired, kept
to their scope, and bad ones counted per address (429 past the login limit)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import AccessToken
from sessions_app.services import sync_tokens

pytestmark = pytest.mark.django_db


def _address() -> str:
    return f"10.9.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"


def test_a_token_is_stored_only_as_its_hash_and_gives_its_owner(make_user):
    user = make_user()
    row, token = sync_tokens.create_token(user, "laptop", days=30)
    assert token.startswith(f"pwt_{row.prefix}_")
    stored = AccessToken.objects.get(pk=row.pk)
    assert token not in (stored.digest, stored.prefix, stored.name)
    assert stored.scope == "sync"
    assert timedelta(days=29) < stored.expires_at - timezone.now() <= timedelta(days=30)
    assert sync_tokens.authenticate(token, _address()) == user
    assert AccessToken.objects.get(pk=row.pk).last_used_at is not None


@pytest.mark.parametrize("change", ["revoked", "expired", "other scope", "tampered"])
def test_a_token_that_no_longer_gives_access_is_401(make_user, change):
    user = make_user()
    row, token = sync_tokens.create_token(user, "laptop")
    if change == "revoked":
        assert sync_tokens.revoke_token(user, row.pk)
    elif change == "expired":
        AccessToken.objects.filter(pk=row.pk).update(expires_at=timezone.now())
    elif change == "other scope":
        AccessToken.objects.filter(pk=row.pk).update(scope="admin")
    else:
        token = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    with pytest.raises(sync_tokens.TokenError) as caught:
        sync_tokens.authenticate(token, _address())
    assert caught.value.status == 401


def test_only_the_owner_revokes_a_token(make_user):
    owner, other = make_user(), make_user()
    row, token = sync_tokens.create_token(owner, "laptop")
    assert not sync_tokens.revoke_token(other, row.pk)
    assert sync_tokens.authenticate(token, _address()) == owner


def test_too_many_bad_tokens_from_one_address_get_429_even_with_a_good_one(make_user, settings):
    settings.PIWEB_LOGIN_FAILURE_LIMIT = 3
    user = make_user()
    _row, token = sync_tokens.create_token(user, "laptop")
    address = _address()
    for _ in range(3):
        with pytest.raises(sync_tokens.TokenError) as caught:
            sync_tokens.authenticate("pwt_nothing_here", address)
        assert caught.value.status == 401
    with pytest.raises(sync_tokens.TokenError) as caught:
        sync_tokens.authenticate(token, address)
    assert caught.value.status == 429
    assert sync_tokens.authenticate(token, _address()) == user  # another address


@pytest.mark.parametrize(("name", "days"), [("", 30), ("x" * 101, 30), ("ok", 0), ("ok", 4000)])
def test_a_token_needs_a_name_and_a_sensible_life(make_user, name, days):
    with pytest.raises(sync_tokens.TokenRequestError):
        sync_tokens.create_token(make_user(), name, days=days)
