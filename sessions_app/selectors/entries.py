"""Reads about single entries: the Entry-by-pi-id lookup in one place, and reads pages
need without loading payloads."""

from __future__ import annotations

from django.db.models.functions import Length

from sessions_app.core.errors import NotFound
from sessions_app.core.preview import entry_text
from sessions_app.models import Entry, Session


def session_entries(session: Session):
    """The entries of one session (a queryset to narrow further)."""
    return Entry.objects.filter(session=session)


def find_entry(session: Session, pi_id: str | None, *fields: str) -> Entry | None:
    """The session's entry with this pi id, or None (`fields`: load only those columns)."""
    if not pi_id:
        return None
    entries = session_entries(session).filter(pi_id=pi_id)
    if fields:
        entries = entries.only(*fields)
    return entries.first()


def get_entry(session: Session, pi_id: str, *fields: str) -> Entry:
    """The session's entry with this pi id; `NotFound` (a 404) when there is none."""
    entry = find_entry(session, pi_id, *fields)
    if entry is None:
        raise NotFound(f"No entry {pi_id!r} in this session.")
    return entry


def get_entry_or_404(session: Session, pi_id: str | None, *fields: str) -> Entry:
    entry = find_entry(session, pi_id, *fields)
    if entry is None:
        raise NotFound("No such entry in this session.")
    return entry


def entry_exists(session: Session, pi_id: str | None) -> bool:
    return bool(pi_id) and session_entries(session).filter(pi_id=pi_id).exists()


def entry_pk(session: Session, pi_id: str | None) -> int | None:
    """The primary key of the session's entry with this pi id (no payload loaded)."""
    if not pi_id:
        return None
    return session_entries(session).filter(pi_id=pi_id).values_list("pk", flat=True).first()


def child_previews(session: Session, entry: Entry, limit: int = 20) -> list[tuple[str, str]]:
    """(pi_id, preview) of an entry's first children, in order."""
    return list(
        session_entries(session)
        .filter(parent=entry)
        .order_by("seq")
        .values_list("pi_id", "preview")[:limit]
    )


def line_lengths(session: Session, pi_ids) -> dict[str, int]:
    """Characters of each entry's stored line, by pi id (one query, no payloads)."""
    rows = (
        session_entries(session)
        .filter(pi_id__in=[i for i in pi_ids if i])
        .annotate(chars=Length("line"))
        .values_list("pi_id", "chars")
    )
    return dict(rows)


def plain_text(payload: dict) -> str:
    """An entry's whole text as plain text (what "show more" pages through)."""
    return entry_text(payload)


def stored_lines(session: Session, pi_ids) -> dict[str, str]:
    """pi id → stored JSONL line of the session's entries among `pi_ids`."""
    return dict(
        Entry.objects.filter(session=session, pi_id__in=list(pi_ids)).values_list("pi_id", "line")
    )


def lines_in_order(session: Session, pi_ids) -> list[str]:
    """The stored lines of the session's entries among `pi_ids`, in the order they were
    added."""
    return list(
        Entry.objects.filter(session=session, pi_id__in=pi_ids)
        .order_by("seq")
        .values_list("line", flat=True)
    )


def pi_ids_in_order(session: Session) -> list[str]:
    """The pi ids of the session's entries, in the order they were added."""
    return list(
        Entry.objects.filter(session=session).order_by("seq").values_list("pi_id", flat=True)
    )


def last_added(session: Session, pi_ids) -> str | None:
    """Of the session's entries among `pi_ids`, the pi id of the one added last."""
    return (
        Entry.objects.filter(session=session, pi_id__in=pi_ids)
        .order_by("-seq")
        .values_list("pi_id", flat=True)
        .first()
    )


def entries_after(session: Session, seq: int, limit: int) -> list[tuple[int, int, str, str]]:
    """(seq, pk, pi id, line) of at most `limit` entries past `seq`, in seq order: one page
    of a walk through a session too big to load at once."""
    return list(
        Entry.objects.filter(session=session, seq__gt=seq)
        .order_by("seq")
        .values_list("seq", "pk", "pi_id", "line")[:limit]
    )


def pks_by_pi_id(session: Session, pi_ids) -> dict[str, int]:
    """pi id → primary key of the session's entries among `pi_ids` (asked 1,000 at a
    time, so that a big set stays under the databases' parameter limits)."""
    found: dict[str, int] = {}
    ids = sorted(pi_ids)
    for start in range(0, len(ids), 1000):
        found.update(
            Entry.objects.filter(session=session, pi_id__in=ids[start : start + 1000]).values_list(
                "pi_id", "pk"
            )
        )
    return found


def pi_id_of(entry_pk: int) -> str | None:
    """The pi id of the entry with this primary key (None when there is none)."""
    return Entry.objects.filter(pk=entry_pk).values_list("pi_id", flat=True).first()


def iter_entries(session: Session):
    """Every entry of the session in seq order, as an iterator (a session may have too
    many to hold)."""
    return session.entries.order_by("seq").iterator(chunk_size=2000)
