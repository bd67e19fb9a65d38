"""Reading review comments: threads on an entry, open threads, counts (writing them:
`services/comments.py`)."""

from django.db.models import Count, Q

from sessions_app.models import Comment, Session


def threads_for_entry(session: Session, entry_pi_id: str) -> list[Comment]:
    """Thread roots on one entry, oldest first, each with `.thread_replies` loaded."""
    comments = list(
        Comment.objects.filter(session=session, entry__pi_id=entry_pi_id)
        .select_related("author", "resolved_by", "entry")
        .order_by("created_at", "pk")
    )
    by_root: dict[int, list[Comment]] = {}
    roots = []
    for c in comments:
        if c.reply_to_id is None:
            roots.append(c)
        else:
            by_root.setdefault(c.reply_to_id, []).append(c)
    for root in roots:
        root.thread_replies = by_root.get(root.pk, [])
    return roots


def open_threads(session: Session):
    """Open thread roots of a session (the review list), with reply counts."""
    return (
        Comment.objects.filter(session=session, reply_to=None, resolved=False)
        .select_related("author", "entry")
        .annotate(reply_count=Count("replies"))
        .order_by("entry__seq", "created_at")
    )


def open_comment_counts(session: Session, key: str = "entry_id") -> dict:
    """{entry: number of open threads}, keyed by entry pk (or `key="entry__pi_id"`)."""
    rows = (
        Comment.objects.filter(session=session, reply_to=None, resolved=False)
        .values(key)
        .annotate(n=Count("id"))
    )
    return {row[key]: row["n"] for row in rows}


def open_comment_counts_by_pi_id(session: Session) -> dict[str, int]:
    """The same counts keyed by entry pi_id (the tree's markers and JSON)."""
    return open_comment_counts(session, key="entry__pi_id")


def comment_totals(session: Session) -> dict[str, int]:
    roots = Comment.objects.filter(session=session, reply_to=None)
    return roots.aggregate(
        open=Count("id", filter=Q(resolved=False)), resolved=Count("id", filter=Q(resolved=True))
    )


def session_comment(session: Session, comment_pk: int) -> Comment | None:
    """The comment `comment_pk` of `session`, or None."""
    return Comment.objects.filter(pk=comment_pk, session=session).first()


def entry_comment(session: Session, entry, comment_pk: int) -> Comment | None:
    """The comment `comment_pk` on `entry` of `session`, or None."""
    return Comment.objects.filter(pk=comment_pk, session=session, entry=entry).first()
