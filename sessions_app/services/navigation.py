"""Moving around the tree from the browser: navigate (pi's rule) and labels, idempotently.

`navigate` applies the pure core's rule (`SessionTree.navigate_target`): a user message
or custom_message target puts the leaf on its parent and gives its text back for the
input box; any other target becomes the leaf. It locks the session row and does nothing
when the leaf is already where it would go (double clicks and two tabs are harmless).

Navigation while a compaction or branch summary of the same session is running is
allowed: the branch-summary job (services/jobs/branch_summary.py) attaches its summary
to the position it was requested for, whatever the leaf does meanwhile, and a compaction
whose leaf moved to another branch is superseded. `blocking_job` lets the page say so.
"""

from dataclasses import dataclass

from django.db import transaction

from sessions_app.context.tree import SessionTree
from sessions_app.models import Entry, Job, Session
from sessions_app.services import events
from sessions_app.services.tree import label_entry, lock_session, record_activity

BLOCKING_JOB_KINDS = (Job.Kind.COMPACTION, Job.Kind.BRANCH_SUMMARY)


@dataclass(frozen=True)
class NavigationResult:
    leaf: str | None
    editor_text: str | None
    moved: bool


def blocking_job(session: Session) -> Job | None:
    """A compaction / branch summary of this session that is queued or running."""
    return (
        Job.objects.filter(session=session, kind__in=BLOCKING_JOB_KINDS, status__in=Job.ACTIVE)
        .order_by("created_at")
        .first()
    )


def resolve_target(session: Session, target_pi_id: str) -> dict:
    """Where the leaf goes for `target_pi_id`: {"leafId", "editorText"} (core rule)."""
    entry = Entry.objects.filter(session=session, pi_id=target_pi_id).only("line").first()
    if entry is None:
        raise Entry.DoesNotExist(f"No entry {target_pi_id} in this session.")
    return SessionTree([entry.payload]).navigate_target(target_pi_id)


def navigate(session: Session, target_pi_id: str, *, actor=None) -> NavigationResult:
    """Move the leaf for a click on `target_pi_id` (see module docstring)."""
    with transaction.atomic():
        locked = lock_session(session.pk)
        rule = resolve_target(locked, target_pi_id)
        new_leaf = rule["leafId"]
        if (
            new_leaf is not None
            and not Entry.objects.filter(session=locked, pi_id=new_leaf).exists()
        ):
            new_leaf = None  # the target's parent is dangling: "before the first entry"
        current = locked.leaf.pi_id if locked.leaf_id else None
        moved = current != new_leaf
        if moved:
            locked.leaf = (
                Entry.objects.get(session=locked, pi_id=new_leaf) if new_leaf is not None else None
            )
            locked.save(update_fields=["leaf", "modified_at"])
            record_activity(locked, actor, "navigated", leaf=new_leaf, target=target_pi_id)
            events.publish(locked.pk, "leaf_moved", {"leaf": new_leaf})
    session.refresh_from_db()
    return NavigationResult(leaf=new_leaf, editor_text=rule["editorText"], moved=moved)


def set_label(session: Session, target_pi_id: str, label: str | None, *, actor=None):
    """Set or (blank) remove a label; a no-op when the label already has that value."""
    label = (label or "").strip()[:200]
    with transaction.atomic():
        lock_session(session.pk)
        current = (
            Entry.objects.filter(session=session, pi_id=target_pi_id)
            .values_list("label", flat=True)
            .first()
        )
        if current is None:
            raise Entry.DoesNotExist(f"No entry {target_pi_id} in this session.")
        if current == label:
            return None
        return label_entry(session, target_pi_id, label, actor=actor)
