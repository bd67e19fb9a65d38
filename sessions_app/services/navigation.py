"""Moving around the tree from the browser: navigate (pi's rule) and labels, idempotently.

Where a click puts the leaf is decided by `selectors.navigation.resolve_target`.
`navigate` locks the session row and does nothing when the leaf is already where it
would go (double clicks and two tabs are harmless).

Navigation while a compaction or branch summary of the same session is running is
allowed: the branch-summary job (services/jobs/branch_summary.py) attaches its summary
to the position it was requested for, whatever the leaf does meanwhile, and a compaction
whose leaf moved to another branch is superseded. `selectors.navigation.blocking_job` lets the page say so.
"""

from dataclasses import dataclass

from django.db import transaction

from sessions_app.core.errors import NotFound
from sessions_app.models import ArchivedBranch, Session
from sessions_app.selectors.entries import entry_exists, find_entry
from sessions_app.selectors.navigation import is_archived, resolve_target
from sessions_app.services import alternatives, events
from sessions_app.services.sessions import label_entry, lock_session, record_activity


@dataclass(frozen=True)
class NavigationResult:
    leaf: str | None
    editor_text: str | None
    moved: bool


def navigate(session: Session, target_pi_id: str, *, actor=None) -> NavigationResult:
    """Move the leaf for a click on `target_pi_id` (see module docstring)."""
    with transaction.atomic():
        locked = lock_session(session.pk)
        target = resolve_target(locked, target_pi_id)
        new_leaf = target.leaf
        moved = locked.leaf_pi_id != new_leaf
        if moved:
            locked.leaf = find_entry(locked, new_leaf, "pk", "pi_id")
            locked.save(update_fields=["leaf", "modified_at"])
            record_activity(locked, actor, "navigated", leaf=new_leaf, target=target_pi_id)
            events.publish(locked.pk, "leaf_moved", {"leaf": new_leaf})
    session.refresh_from_db()
    return NavigationResult(leaf=new_leaf, editor_text=target.editor_text, moved=moved)


def set_label(session: Session, target_pi_id: str, label: str | None, *, actor=None):
    """Set or (blank) remove a label; a no-op when the label already has that value."""
    label = (label or "").strip()[:200]
    with transaction.atomic():
        lock_session(session.pk)
        entry = find_entry(session, target_pi_id, "label")
        if entry is None:
            raise NotFound(f"No entry {target_pi_id} in this session.")
        current = entry.label
        if current == label:
            return None
        return label_entry(session, target_pi_id, label, actor=actor)


def set_archived(session: Session, head_pi_id: str, archived: bool, *, actor=None) -> bool:
    """Archive the branch below `head_pi_id` (it folds away in the tree and the
    comparison) or show it again; idempotent. True when something changed. The entries
    stay: an archived branch is still in the session and its exports."""
    with transaction.atomic():
        locked = lock_session(session.pk)
        if not entry_exists(locked, head_pi_id):
            raise NotFound(f"No entry {head_pi_id} in this session.")
        if archived:
            if is_archived(locked, head_pi_id):
                return False
            by = actor if getattr(actor, "is_authenticated", False) else None
            ArchivedBranch.objects.create(session=locked, head_pi_id=head_pi_id, archived_by=by)
        elif not ArchivedBranch.objects.filter(session=locked, head_pi_id=head_pi_id).delete()[0]:
            return False
        record_activity(
            locked, actor, "branch_archived" if archived else "branch_unarchived", entry=head_pi_id
        )
        if archived:  # an alternative's workspace copy goes with it (the quota counts it)
            alternatives.remove_copies(locked, head_pi_id)
        events.publish(locked.pk, "session_changed", {"archived": head_pi_id if archived else None})
    if not archived:  # shown again: an alternative's copy comes back, from its snapshots
        try:
            alternatives.restore_copy(locked, head_pi_id)
        except alternatives.AlternativeError as exc:
            raise alternatives.AlternativeError(
                f"The branch is shown again, but its workspace could not be restored: {exc}",
                exc.status,
            ) from None
    return True
