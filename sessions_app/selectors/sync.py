"""Reads of the sync API and the tokens page: a user's tokens, their synced files, the
lines piweb added that a client has yet to write back, and where a synced session came
from."""

from __future__ import annotations

from sessions_app.core.errors import NotFound
from sessions_app.core.shipped import read_shipped
from sessions_app.models import AccessToken, Entry, Session, SyncedFile


def client_source() -> bytes:
    """The sync client, one standard-library file shipped with piweb."""
    return read_shipped("piweb_sync.py")


def tokens_of(user) -> list[AccessToken]:
    return list(AccessToken.objects.filter(user=user).order_by("-created_at"))


def token_by_prefix(prefix: str) -> AccessToken | None:
    """The token whose public prefix this is, with its user, or None."""
    return AccessToken.objects.select_related("user").filter(prefix=prefix).first()


def synced_file_by_pk(pk: int) -> SyncedFile:
    """The synced file `pk`, with its session."""
    return SyncedFile.objects.select_related("session").get(pk=pk)


def synced_file(owner, client: str, path: str) -> SyncedFile | None:
    return SyncedFile.objects.filter(owner=owner, client=client, client_path=path).first()


def pending_lines(row: SyncedFile) -> list[dict]:
    """The lines piweb added to the file's session that its client has not written back
    yet, in the order they were added: [{"id", "line"}]."""
    if not row.pending or row.session_id is None:
        return []
    rows = (
        Entry.objects.filter(session_id=row.session_id, pi_id__in=row.pending)
        .order_by("seq")
        .values_list("pi_id", "line")
    )
    return [{"id": pi_id, "line": line} for pi_id, line in rows]


def owned_session(owner, pi_id: str) -> Session:
    """One of `owner`'s sessions by its pi id; 404 for any other (whoever holds it)."""
    session = Session.objects.filter(pi_id=pi_id, owner=owner).first()
    if session is None:
        raise NotFound("No such session.")
    return session


def files_with_pending(owner, client: str) -> list[SyncedFile]:
    """The client's files whose sessions have lines piweb added and it has not written
    back."""
    return [
        row
        for row in SyncedFile.objects.filter(owner=owner, client=client, session__isnull=False)
        if row.pending
    ]
