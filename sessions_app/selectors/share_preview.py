"""What a share link would show, before it is made: the share dialog's preview."""

from __future__ import annotations

from sessions_app.core.share_scope import visible_ids
from sessions_app.models import Entry, Session


def share_preview(session: Session, leaf: str, target: str) -> dict | None:
    """The leaf and focus nodes (their previews) and how many entries each scope shows;
    None when the leaf is not an entry of the session."""
    pairs = list(Entry.objects.filter(session=session).values_list("pi_id", "parent_pi_id"))
    ids = {pi_id for pi_id, _ in pairs}
    if not leaf or leaf not in ids:
        return None
    path = visible_ids(pairs, leaf)
    subtree = visible_ids(pairs, leaf, subtree=True)
    wanted = [leaf] + ([target] if target and target != leaf else [])
    previews = dict(
        Entry.objects.filter(session=session, pi_id__in=wanted).values_list("pi_id", "preview")
    )
    return {
        "leaf": {"id": leaf, "preview": previews.get(leaf, "")},
        "target": (
            {"id": target, "preview": previews.get(target, ""), "on_path": target in path}
            if target and target != leaf and target in ids
            else None
        ),
        "counts": {"path": len(path), "subtree": len(subtree)},
        "below": len(subtree) - len(path),
    }
