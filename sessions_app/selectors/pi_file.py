"""The pi file a session is followed from, as pages and the chat see it (writing it
back: `services/write_back.py`)."""

from __future__ import annotations

import os
import time

from django.conf import settings

from sessions_app.models import FollowedFile, Session


def followed_file(session: Session) -> FollowedFile | None:
    """The pi file this session is followed from (None: not followed, or gone)."""
    if not session.source_path:
        return None
    return (
        FollowedFile.objects.filter(session_id=session.pk)
        .exclude(state=FollowedFile.State.GONE)
        .order_by("-updated_at")
        .first()
    )


def file_state(session: Session) -> dict:
    """What piweb keeps about the followed file in `Session.settings["pi_file"]`."""
    return dict((session.settings or {}).get("pi_file") or {})


def write_back_enabled(session: Session) -> bool:
    return bool(file_state(session).get("write_back", settings.PIWEB_WRITE_BACK_DEFAULT))


def pi_writing_since(session: Session, row: FollowedFile | None = None) -> float | None:
    """Seconds since pi last changed this session's file, when that is less than
    `PIWEB_PI_QUIET_SECONDS` (pi is writing it now); None otherwise. piweb's own
    write-back is not pi writing."""
    row = row if row is not None else followed_file(session)
    if row is None:
        return None
    try:
        st = os.stat(row.path)
    except OSError:
        return None
    if st.st_mtime_ns == file_state(session).get("mtime_ns"):
        return None
    age = max(0.0, time.time() - st.st_mtime_ns / 1e9)
    return age if age < settings.PIWEB_PI_QUIET_SECONDS else None


def due_sessions() -> list[int]:
    """The pks of the sessions whose write-back waits to be tried again."""
    return list(Session.objects.filter(settings__pi_file__due=True).values_list("pk", flat=True))


# --- the follower's reads (services/following.py) --------------------------------------


def followed_at(path: str) -> FollowedFile | None:
    """What the follower knows of the file at `path`, or None."""
    return FollowedFile.objects.filter(path=path).first()


def followed_at_paths(paths: list[str]) -> dict[str, FollowedFile]:
    """path → what the follower knows of it, for those of `paths` it knows."""
    return {row.path: row for row in FollowedFile.objects.filter(path__in=paths)}


def followed_with_inode(device: int, inode: int) -> list[FollowedFile]:
    """The known files that were last seen with this device and inode."""
    return list(FollowedFile.objects.filter(device=device, inode=inode))


def known_inodes(inodes) -> set[tuple[int, int]]:
    """(device, inode) of the known files whose inode is among `inodes`."""
    return set(FollowedFile.objects.filter(inode__in=inodes).values_list("device", "inode"))


def followed_page_under(prefix: str, after_pk: int, limit: int) -> list[tuple[int, str]]:
    """(pk, path) of at most `limit` known files under `prefix` (a folder ending in the
    separator) not yet marked gone, past `after_pk`, in pk order."""
    return list(
        FollowedFile.objects.filter(path__startswith=prefix, pk__gt=after_pk)
        .exclude(state=FollowedFile.State.GONE)
        .order_by("pk")
        .values_list("pk", "path")[:limit]
    )
