"""Reads for pages that gather facts from several models."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from datetime import datetime

from sessions_app.models import FollowedFile, Session, SyncedFile


def pi_session_file_name(session: Session) -> str:
    """pi's own name for a session file, `<header timestamp>_<id>.jsonl` (the timestamp
    with ':' and '.' made '-'), so an export sits among pi's files like one of them."""
    stamp = re.sub(r"[^0-9A-Za-z-]", "-", session.header_timestamp) or "session"
    return f"{stamp}_{session.pi_id}.jsonl"


@dataclass
class Provenance:
    """Where a session comes from, and how to open it in pi."""

    kind: str  # followed | gone | stopped | synced | imported | piweb
    label: str
    path: str  # the pi session file on this machine ("" when none is known)
    last_read_at: datetime | None
    note: str
    resume_command: str
    export_file_name: str  # set when the command refers to the JSONL export


def session_provenance(session: Session) -> Provenance:
    followed = (
        FollowedFile.objects.filter(session=session)
        .only("path", "state", "message", "last_read_at")
        .order_by("-updated_at")
        .first()
    )
    path = session.source_path
    last_read_at = None
    note = ""
    if followed is not None:
        path = followed.path
        last_read_at = followed.last_read_at
        if followed.state == FollowedFile.State.GONE:
            kind, label = "gone", "Followed: file gone from disk"
        elif followed.state == FollowedFile.State.FOLLOWING:
            kind, label = "followed", "Followed live"
        else:
            kind, label = "stopped", "Followed: not read"
            note = followed.message
    elif synced := _synced_from(session):
        return Provenance(
            "synced",
            f"Synced live from {synced.client}",
            synced.client_path,
            synced.last_pushed_at,
            "",
            f"pi --session {_client_quote(synced.client_path)}",
            "",
        )
    elif session.source == Session.Source.IMPORTED:
        kind, label = "imported", "Imported once"
    else:
        kind, label = "piweb", "Started in piweb"
    if path and kind != "gone":
        return Provenance(
            kind, label, path, last_read_at, note, f"pi --session {shlex.quote(path)}", ""
        )
    name = pi_session_file_name(session)
    return Provenance(
        kind, label, path, last_read_at, note, f"pi --session {shlex.quote(name)}", name
    )


def _synced_from(session: Session) -> SyncedFile | None:
    """The file on a user's machine the sync client sends this session from (its latest)."""
    return (
        SyncedFile.objects.filter(session=session)
        .only("client", "client_path", "last_pushed_at")
        .order_by("-last_pushed_at")
        .first()
    )


def _client_quote(path: str) -> str:
    """A client's path for its shell: `~/` left for the shell to expand."""
    if path.startswith("~/"):
        return "~/" + shlex.quote(path[2:])
    return shlex.quote(path)
