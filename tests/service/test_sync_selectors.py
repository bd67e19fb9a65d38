"""selectors/sync.py: what the token API reads (a token by its prefix, a client's file, one
of the owner's sessions), each kept to its owner."""

import pytest

from sessions_app.core.errors import NotFound
from sessions_app.models import SyncedFile
from sessions_app.selectors import sync
from sessions_app.services import sessions, sync_tokens

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


def test_a_token_is_found_by_its_prefix_with_its_user(make_user):
    alice = make_user("alice")
    row, token = sync_tokens.create_token(alice, "laptop")
    found = sync.token_by_prefix(row.prefix)
    assert found == row and found.user == alice
    assert sync.token_by_prefix("0" * 12) is None
    assert row.prefix in token
    assert sync.tokens_of(alice) == [row] and sync.tokens_of(make_user("bob")) == []


def test_a_clients_file_and_a_session_are_the_owners_only(make_user):
    alice, bob = make_user("alice"), make_user("bob")
    session = sessions.create_session(owner=alice, cwd="/tmp")
    row = SyncedFile.objects.create(
        owner=alice, client="laptop", client_path="/a.jsonl", session=session
    )
    assert sync.synced_file(alice, "laptop", "/a.jsonl") == row
    assert sync.synced_file(bob, "laptop", "/a.jsonl") is None
    assert sync.synced_file(alice, "desktop", "/a.jsonl") is None
    assert sync.synced_file_by_pk(row.pk).session == session
    assert sync.owned_session(alice, session.pi_id) == session
    with pytest.raises(NotFound) as refused:
        sync.owned_session(bob, session.pi_id)
    assert refused.value.status == 404 and refused.value.code == "not_found"
