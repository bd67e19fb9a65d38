"""The entry-written event (services/entry_written.py): `append_entry` is a plain write
and the features that react to a new entry subscribe; what they write commits with the
entry or not at all, and what they do outside the database waits for the commit."""

from __future__ import annotations

import pytest
from django.db import transaction

from sessions_app.models import Entry, SearchDocument
from sessions_app.services import entry_written, sessions

pytestmark = [pytest.mark.embedded, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def session(make_user):
    return sessions.create_session(owner=make_user(), cwd="/w")


@pytest.fixture
def extra_subscriber():
    """Subscribe a test's own hooks for the test only."""
    added = []

    def add(**hooks):
        added.append(entry_written.subscribe(entry_written.Subscriber("test-only", **hooks)))

    yield add
    entry_written._subscribers.pop("test-only", None)


def test_the_app_config_subscribes_every_feature_in_its_order():
    assert list(entry_written.subscribers()) == [
        "live_events",
        "search",
        "usage",
        "sync",
        "write_back",
    ]


def message(text: str) -> dict:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


def test_what_subscribers_write_commits_with_the_entry(session, extra_subscriber):
    seen = []
    extra_subscriber(
        in_transaction=lambda w: seen.append(
            ("during", transaction.get_connection().in_atomic_block)
        ),
        after_commit=lambda w: seen.append(("after", transaction.get_connection().in_atomic_block)),
    )
    entry = sessions.append_entry(session, message("findable words"))
    assert seen == [("during", True), ("after", False)]
    assert SearchDocument.objects.filter(entry=entry).exists()  # the search subscriber
    session.refresh_from_db()
    assert session.last_activity_at is not None  # the usage subscriber


def test_a_subscriber_that_fails_fails_the_write_and_nothing_runs_after(session, extra_subscriber):
    after = []

    def refuse(written):
        raise RuntimeError("refused")

    extra_subscriber(in_transaction=refuse, after_commit=after.append)
    with pytest.raises(RuntimeError, match="refused"):
        sessions.append_entry(session, message("lost"))
    assert not Entry.objects.filter(session=session).exists()
    assert not SearchDocument.objects.filter(session=session).exists()
    assert after == []
    session.refresh_from_db()
    assert session.entry_count == 0 and session.next_seq == 0
