"""Managing sessions without the admin site: archive, pin, tag, delete (rename is
`sessions.rename_session`, a `session_info` entry as pi writes it). One function per
change, each atomic; every open sessions list of the people who see the session is told."""

from __future__ import annotations

import re

from django.db import transaction

from sessions_app.core.errors import ServiceError
from sessions_app.core.input_limits import MAX_NAME_CHARS
from sessions_app.core.text import clean_text
from sessions_app.models import Session
from sessions_app.services import alternatives, changes, events, fork
from sessions_app.services.sessions import lock_session, record_activity, rename_session

MAX_TAGS = 12
MAX_TAG_CHARS = 32
_TAG_SPLIT = re.compile(r"[\s,]+")
_TAG_OK = re.compile(r"[^\w.:/+-]")


class ManageError(ServiceError):
    """A change the user asked for that cannot be made (shown to them as is)."""

    code = "manage"


def parse_tags(raw: str) -> list[str]:
    """Tags from what the user typed: split on spaces and commas, lower-cased, a leading
    # dropped, odd characters removed, duplicates dropped, order kept."""
    tags: list[str] = []
    for word in _TAG_SPLIT.split((raw or "").strip()):
        tag = _TAG_OK.sub("", word.lstrip("#").lower())[:MAX_TAG_CHARS]
        if tag and tag not in tags:
            tags.append(tag)
    if len(tags) > MAX_TAGS:
        raise ManageError(f"At most {MAX_TAGS} tags on a session.")
    return tags


def stored_tags(tags: list[str]) -> str:
    return "\n" + "\n".join(tags) + "\n" if tags else ""


def tag_list(stored: str) -> list[str]:
    return [t for t in (stored or "").split("\n") if t]


def _update(session: Session, actor, verb: str, **fields) -> Session:
    with transaction.atomic():
        locked = lock_session(session.pk)
        for name, value in fields.items():
            setattr(locked, name, value)
        locked.save(update_fields=[*fields, "modified_at"])
        shown = {k: (tag_list(v) if k == "tags" else v) for k, v in fields.items()}
        record_activity(locked, actor, verb, **shown)
        events.publish_sessions_changed([locked.pk])
        events.publish(locked.pk, "session_changed", {k: str(v) for k, v in shown.items()})
    session.refresh_from_db()
    return session


def rename(session: Session, raw_name: str, *, actor) -> None:
    """Rename from a form: the name cleaned and cut to its column, and nothing recorded
    when it does not change (pi's `session_info` entry otherwise)."""
    name = clean_text(raw_name or "").strip()[:MAX_NAME_CHARS]
    if name != session.name:
        rename_session(session, name, actor=actor)


def set_archived(session: Session, archived: bool, *, actor) -> Session:
    return _update(session, actor, "archived" if archived else "unarchived", archived=archived)


def set_pinned(session: Session, pinned: bool, *, actor) -> Session:
    return _update(session, actor, "pinned" if pinned else "unpinned", pinned=pinned)


def set_tags(session: Session, raw: str, *, actor) -> Session:
    return _update(session, actor, "tagged", tags=stored_tags(parse_tags(raw)))


def delete_session(session: Session, *, actor, confirm: str) -> None:
    """Delete the session, its entries, shares and links: for everyone it is shared with.
    `confirm` must repeat the session's id (or its first 8 characters), as typed in the
    confirmation dialog."""
    confirm = (confirm or "").strip()
    if not confirm or not (confirm == session.pi_id or confirm == session.pi_id[:8]):
        raise ManageError("Type the first 8 characters of the session's id to delete it.")
    with transaction.atomic():
        locked = lock_session(session.pk)
        events.publish(locked.pk, "access_changed", {"reason": "deleted"})
        changes.forget_repositories(locked)
        alternatives.remove_copies(locked)
        fork.hand_over_copies(locked)
        locked.delete()  # (the sessions lists of its audience are told by sharing's receiver)
