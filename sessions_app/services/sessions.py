"""State changes on the session tree: one function per change, each atomic.

Concurrency rule: every write locks the session row first (SELECT … FOR UPDATE on
PostgreSQL; SQLite serializes writers with BEGIN IMMEDIATE). Two appenders that both
saw leaf L pass `parent_pi_id=L` and make a branch at L; no entry is ever lost.
"""

import secrets
import uuid
from datetime import UTC, datetime

from django.db import transaction

from sessions_app.core.errors import NotFound
from sessions_app.core.preview import entry_row_columns
from sessions_app.core.usage import usage_with_day
from sessions_app.models import Activity, Entry, Session
from sessions_app.selectors.entries import entry_exists, get_entry
from sessions_app.selectors.paths import UNSET
from sessions_app.services import events
from sessions_app.services.entry_written import EntryWritten, emit
from sessions_app.services.usage import usage_columns


def now_iso() -> str:
    """An ISO timestamp the way JS's Date.toISOString() writes it."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_entry_id(existing: set[str] | None = None) -> str:
    while True:
        candidate = secrets.token_hex(4)
        if not existing or candidate not in existing:
            return candidate


def entry_columns(payload: dict) -> dict:
    """The denormalized columns of an Entry, derived from its pi payload."""
    names = ("type", "timestamp", "role", "tool_name", "preview", "token_count", "pi_tokens")
    return dict(zip(names, entry_row_columns(payload), strict=True))


def lock_session(session_pk: int) -> Session:
    return Session.objects.select_for_update().get(pk=session_pk)


def record_activity(session: Session, actor, verb: str, **details) -> None:
    new_activity(session, actor, verb, **details).save()


def new_activity(session: Session, actor, verb: str, **details) -> Activity:
    """The (unsaved) activity row `record_activity` writes; for writing many at once."""
    return Activity(
        session=session,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        verb=verb,
        details=details,
    )


@transaction.atomic
def create_session(
    *,
    owner,
    cwd: str,
    name: str = "",
    parent: Session | None = None,
    source: str = Session.Source.LIVE,
    model_profile: str = "",
) -> Session:
    started = datetime.now(UTC)
    session = Session.objects.create(
        pi_id=str(uuid.uuid4()),
        header_timestamp=started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        started_at=started,
        cwd=cwd,
        owner=owner,
        name=name,
        parent=parent,
        parent_session_ref=parent.pi_id if parent else "",
        source=source,
        model_profile=model_profile,
    )
    record_activity(session, owner, "created", cwd=cwd)
    events.publish_sessions_changed([session.pk])
    return session


def _apply_side_effects(session: Session, entry: Entry) -> None:
    """Keep the denormalized session/entry columns in step with pi's semantics."""
    payload = entry.payload
    if entry.type == "label":
        # pi: the newest label entry for a target wins; an absent label removes it.
        Entry.objects.filter(session=session, pi_id=payload.get("targetId")).update(
            label=(payload.get("label") or "")[:200]
        )
    elif entry.type == "session_info":
        session.name = (payload.get("name") or "")[:500]
    if not session.first_message and entry.role == "user":
        session.first_message = entry.preview[:300]


def append_entry(
    session: Session, payload: dict, *, parent_pi_id=UNSET, move_leaf: bool = True, actor=None
) -> Entry:
    """Append one pi entry (without id/parentId/timestamp, which are filled in).

    `parent_pi_id` defaults to the current leaf; None makes a new root. A plain write:
    what reacts to a new entry subscribes to the entry-written event (`entry_written`).
    """
    with transaction.atomic():
        locked = lock_session(session.pk)
        if parent_pi_id is UNSET:
            parent = locked.leaf
        elif parent_pi_id is None:
            parent = None
        else:
            parent = get_entry(locked, parent_pi_id)
        existing = set()
        pi_id = new_entry_id()
        while entry_exists(locked, pi_id):
            existing.add(pi_id)
            pi_id = new_entry_id(existing)
        full = {
            "type": payload["type"],
            "id": pi_id,
            "parentId": parent.pi_id if parent else None,
            "timestamp": payload.get("timestamp") or now_iso(),
            **{
                k: v for k, v in payload.items() if k not in ("type", "id", "parentId", "timestamp")
            },
        }
        usage = usage_with_day(full)
        entry = Entry(
            session=locked,
            pi_id=pi_id,
            parent=parent,
            parent_pi_id=parent.pi_id if parent else None,
            seq=locked.next_seq,
            **entry_columns(full),
            **usage_columns(usage[0] if usage else None),
        )
        entry.payload = full  # (its line, serialized as pi writes it)
        entry.save(force_insert=True)
        locked.next_seq += 1
        locked.entry_count += 1
        if move_leaf:
            locked.leaf = entry
        _apply_side_effects(locked, entry)
        locked.save()
        # Search, usage, write-back and the live events subscribe (entry_written.py).
        emit(EntryWritten(locked, entry, actor))
    session.refresh_from_db()
    return entry


@transaction.atomic
def set_leaf(session: Session, leaf_pi_id: str | None, *, actor=None) -> Session:
    """Move the leaf to an entry of this session, or to None (before the first entry)."""
    locked = lock_session(session.pk)
    leaf = None if leaf_pi_id is None else get_entry(locked, leaf_pi_id)
    locked.leaf = leaf
    locked.save(update_fields=["leaf", "modified_at"])
    record_activity(locked, actor, "navigated", leaf=leaf_pi_id)
    events.publish(locked.pk, "leaf_moved", {"leaf": leaf_pi_id})
    session.refresh_from_db()
    return locked


def label_entry(session: Session, target_pi_id: str, label: str | None, *, actor=None) -> Entry:
    """Set (or with a blank label, remove) a label, as a pi `label` entry at the leaf."""
    if not entry_exists(session, target_pi_id):
        raise NotFound(f"No entry {target_pi_id} in this session.")
    payload = {"type": "label", "targetId": target_pi_id}
    label = (label or "").strip()
    if label:
        payload["label"] = label
    with transaction.atomic():
        entry = append_entry(session, payload, actor=actor)
        record_activity(session, actor, "labelled", target=target_pi_id, label=label)
    return entry


def rename_session(session: Session, name: str, *, actor=None) -> Entry:
    """Rename the way pi does: a `session_info` entry at the leaf."""
    with transaction.atomic():
        entry = append_entry(session, {"type": "session_info", "name": name.strip()}, actor=actor)
        record_activity(session, actor, "renamed", name=name.strip())
    return entry
