"""Where a click in the tree moves the leaf, and what stops a move from being quiet.

`resolve_target` is the one place that says where the leaf goes for a click: the pure
core's rule (`SessionTree.navigate_target`: a user message or custom_message target puts
the leaf on its parent and gives its text back for the input box; any other target
becomes the leaf), with a parent this session does not hold read as "before the first
entry". Navigating (services/navigation.py), the branch summary request (services/jobs)
and the entry pane use it.
"""

from collections.abc import Container
from dataclasses import dataclass

from sessions_app.core.tree import SessionTree
from sessions_app.models import ArchivedBranch, Entry, Job, Session
from sessions_app.selectors.entries import entry_exists, get_entry

BLOCKING_JOB_KINDS = (Job.Kind.COMPACTION, Job.Kind.BRANCH_SUMMARY)


@dataclass(frozen=True)
class Target:
    leaf: str | None  # where the leaf goes (None: before the first entry)
    editor_text: str | None  # what goes back into the input box, if anything


def resolve_target(
    session: Session, target: Entry | str, known: Container[str] | None = None
) -> Target:
    """Where the leaf goes for a click on `target` (an Entry of the session or its pi id).
    Raises `NotFound` for an id the session does not hold. `known`: the session's pi ids
    when the caller has them (a tree index), instead of asking the database."""
    if not isinstance(target, Entry):
        target = get_entry(session, target, "pi_id", "line")
    rule = SessionTree([target.payload]).navigate_target(target.pi_id)
    leaf = rule["leafId"]
    exists = (leaf in known) if known is not None else entry_exists(session, leaf)
    if leaf is not None and not exists:
        leaf = None  # the target's parent is dangling: pi treats the target as a root
    return Target(leaf=leaf, editor_text=rule["editorText"])


def blocking_job(session: Session) -> Job | None:
    """A compaction / branch summary of this session that is queued or running."""
    return (
        Job.objects.filter(session=session, kind__in=BLOCKING_JOB_KINDS, status__in=Job.ACTIVE)
        .order_by("created_at")
        .first()
    )


def archived_heads(session: Session) -> set[str]:
    """The heads (pi ids) of the session's archived branches."""
    return set(ArchivedBranch.objects.filter(session=session).values_list("head_pi_id", flat=True))


def is_archived(session: Session, head_pi_id: str) -> bool:
    """Whether the branch below `head_pi_id` is archived."""
    return ArchivedBranch.objects.filter(session=session, head_pi_id=head_pi_id).exists()
