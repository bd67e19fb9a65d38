"""The entry-written event: `sessions.append_entry` stores an entry and tells whoever
subscribed, so appending an entry stays a plain write that imports none of the features
reacting to it (search, usage, write-back, the live events).

A feature subscribes once, at the import of its module, as a job kind registers; the app
config imports those modules (`apps.SessionsAppConfig.ready`), so every process has them
all before it writes. A subscriber has two hooks:

- ``in_transaction(written)`` runs inside the writer's transaction, with the session row
  locked and the entry saved: for what must commit with the entry or not at all (search
  index rows, usage totals, the write-back's bookkeeping and its queued job);
- ``after_commit(written)`` runs after the commit (at once outside a transaction), never
  when it rolls back: for effects outside the database (the live events).

Subscribers run in the order they subscribed. An exception in ``in_transaction`` fails
the write, as the call it replaces did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import transaction

from sessions_app.models import Entry, Session


@dataclass(frozen=True)
class EntryWritten:
    """One entry appended. ``session`` is the writer's locked row, saved with the entry
    (its leaf, counts and name as they now are); ``actor`` who caused it (or None)."""

    session: Session
    entry: Entry
    actor: Any = None


@dataclass(frozen=True)
class Subscriber:
    name: str
    in_transaction: Callable[[EntryWritten], None] | None = None
    after_commit: Callable[[EntryWritten], None] | None = None


_subscribers: dict[str, Subscriber] = {}


def subscribe(subscriber: Subscriber) -> Subscriber:
    """Add a subscriber (once per name: subscribing the same name again replaces it)."""
    _subscribers[subscriber.name] = subscriber
    return subscriber


def subscribers() -> dict[str, Subscriber]:
    return dict(_subscribers)


def emit(written: EntryWritten) -> None:
    """Run every subscriber's ``in_transaction`` now and queue its ``after_commit``."""
    for subscriber in list(_subscribers.values()):
        if subscriber.in_transaction is not None:
            subscriber.in_transaction(written)
        if subscriber.after_commit is not None:
            transaction.on_commit(partial(subscriber.after_commit, written))
