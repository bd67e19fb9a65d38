"""Review comments on entries: threaded, with authors, resolvable.

Comments are not entries: they live in their own table and never reach the model's
context (build_session_context only ever sees Entry payloads).

Who may resolve or reopen a thread (docs/review.md, "Team review"): the person who started it, and
anyone who may edit the session (editors, the owner). A viewer can resolve only their
own threads: a reviewer must not be able to close someone else's open question. Anyone
who may comment can still reply, and a reply reopens a resolved thread.
"""

from django.db import transaction
from django.utils import timezone

from sessions_app.core.errors import ServiceError
from sessions_app.models import Comment, Session
from sessions_app.selectors.access import EDITOR, OWNER, role_for
from sessions_app.selectors.comments import entry_comment, session_comment
from sessions_app.selectors.entries import find_entry
from sessions_app.services.sessions import lock_session, record_activity

MAX_BODY_CHARS = 10_000


class CommentError(ServiceError):
    """Bad comment input, with a message fit for the user."""

    code = "comment"


class CommentRightsError(CommentError):
    """The person may comment but not resolve / reopen this thread."""

    status = 403


def may_resolve(thread: Comment, user, can_edit: bool) -> bool:
    """Whether `user` may resolve or reopen `thread` (a thread root)."""
    return can_edit or thread.author_id == getattr(user, "pk", None)


def _clean_body(body: str) -> str:
    body = (body or "").replace("\x00", "").strip()
    if not body:
        raise CommentError("A comment cannot be empty.")
    if len(body) > MAX_BODY_CHARS:
        raise CommentError(f"A comment is limited to {MAX_BODY_CHARS:,} characters.")
    return body


def _thread_root(comment: Comment) -> Comment:
    while comment.reply_to is not None:
        comment = comment.reply_to
    return comment


@transaction.atomic
def add_comment(
    session: Session, entry_pi_id: str, author, body: str, reply_to: int | None = None
) -> Comment:
    """A new comment on an entry (or a reply in a thread: replies attach to the thread root)."""
    body = _clean_body(body)
    locked = lock_session(session.pk)
    entry = find_entry(locked, entry_pi_id)
    if entry is None:
        raise CommentError(f"No entry {entry_pi_id!r} in this session.")
    parent = None
    if reply_to:
        parent = entry_comment(locked, entry, reply_to)
        if parent is None:
            raise CommentError("The comment you reply to does not exist on this entry.")
        parent = _thread_root(parent)
        if parent.resolved:
            # A reply reopens a resolved thread: someone has more to say.
            parent.resolved, parent.resolved_by, parent.resolved_at = False, None, None
            parent.save(update_fields=["resolved", "resolved_by", "resolved_at"])
    comment = Comment.objects.create(
        session=locked, entry=entry, author=author, reply_to=parent, body=body
    )
    record_activity(
        locked, author, "commented", entry=entry.pi_id, comment=comment.pk, reply=bool(parent)
    )
    return comment


@transaction.atomic
def set_resolved(session: Session, comment_pk: int, user, resolved: bool = True) -> Comment:
    """Resolve (or reopen) a thread. Resolving a reply resolves its thread. Only the
    thread's author or an editor / the owner may (`may_resolve`)."""
    locked = lock_session(session.pk)
    comment = session_comment(locked, comment_pk)
    if comment is None:
        raise CommentError("No such comment in this session.", 404)
    comment = _thread_root(comment)
    can_edit = role_for(user, locked) in (EDITOR, OWNER)
    if not may_resolve(comment, user, can_edit):
        raise CommentRightsError(
            "Only the person who started this thread, an editor or the owner can "
            f"{'resolve' if resolved else 'reopen'} it. You can reply to it."
        )
    comment.resolved = resolved
    comment.resolved_by = user if resolved else None
    comment.resolved_at = timezone.now() if resolved else None
    comment.save(update_fields=["resolved", "resolved_by", "resolved_at"])
    record_activity(
        locked,
        user,
        "resolved comment" if resolved else "reopened comment",
        entry=comment.entry.pi_id,
        comment=comment.pk,
    )
    return comment
