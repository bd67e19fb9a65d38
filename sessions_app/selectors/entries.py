"""Reads about single entries: the Entry-by-pi-id lookup in one place, and reads pages
need without loading payloads."""

from __future__ import annotations

import json

from django.db import connection
from django.db.models.functions import Length

from sessions_app.core.errors import NotFound
from sessions_app.core.input_limits import display_text
from sessions_app.core.preview import entry_text
from sessions_app.core.tool_headline import call_headlines, tool_headline
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


def all_pks_by_pi_id(session: Session) -> dict[str, int]:
    """pi id → primary key of every entry of the session."""
    return dict(session_entries(session).values_list("pi_id", "pk"))


def last_user_preview(session: Session) -> str:
    """The preview of the session's last user message ("" when it has none)."""
    last = (
        session_entries(session)
        .filter(type="message", role="user")
        .order_by("-seq")
        .values_list("preview", flat=True)
        .first()
    )
    return last or ""


def pi_id_of(entry_pk: int) -> str | None:
    """The pi id of the entry with this primary key (None when there is none)."""
    return Entry.objects.filter(pk=entry_pk).values_list("pi_id", flat=True).first()


def iter_entries(session: Session):
    """Every entry of the session in seq order, as an iterator (a session may have too
    many to hold)."""
    return session.entries.order_by("seq").iterator(chunk_size=2000)


def structure(session: Session) -> list[tuple[int, str, int | None, str]]:
    """(pk, pi id, parent pk, type) of every entry of the session, in seq order: ids
    only (what a fork selects from)."""
    return list(
        Entry.objects.filter(session=session)
        .order_by("seq")
        .values_list("pk", "pi_id", "parent_id", "type")
    )


def payloads_and_lines(pks: list[int]) -> dict[int, tuple[dict, str]]:
    """pk -> (payload, line) for the given entries (read by raw SQL in chunks of 2,000:
    no model instance is built)."""
    out: dict[int, tuple[dict, str]] = {}
    table = Entry._meta.db_table
    with connection.cursor() as cursor:
        for start in range(0, len(pks), 2000):
            chunk = pks[start : start + 2000]
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(f"SELECT id, line FROM {table} WHERE id IN ({marks})", chunk)
            for pk, line in cursor.fetchall():
                out[pk] = (json.loads(line), line)
    return out


def entry_headline(entry: Entry) -> str:
    """What a tool entry did, in the one headline the tree and the chat show
    (core/tool_headline): an assistant message's calls, the call a tool result answers
    (found by its call id in the assistant message above its run of results), a user's
    `!command`; "" for any other entry."""
    return display_text(_headline(entry))  # (imported text may hold lone surrogates)


def _headline(entry: Entry) -> str:
    message = entry.payload.get("message")
    if not isinstance(message, dict):
        return ""
    role = message.get("role")
    if role == "assistant":
        return " · ".join(call_headlines(message).values())
    if role == "bashExecution":
        return tool_headline("bash", {"command": message.get("command")})
    if role != "toolResult":
        return ""
    call_id = message.get("toolCallId")
    parent_pk = entry.parent_id
    for _ in range(64):  # (pi answers the calls of one message in a run of results)
        parent = (
            Entry.objects.filter(pk=parent_pk).only("pk", "parent_id", "role", "line").first()
            if parent_pk is not None
            else None
        )
        if parent is None or parent.role not in ("assistant", "toolResult"):
            return ""
        if parent.role == "assistant":
            return call_headlines(parent.payload.get("message")).get(str(call_id or ""), "")
        parent_pk = parent.parent_id
    return ""
