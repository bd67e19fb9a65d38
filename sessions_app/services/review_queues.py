"""Review queues: a team's admins build one from a filter and assign its items; its
reviewers take items one at a time, score or skip them (docs/scores.md).

Handing out is race-free on both databases: the candidates are read (on PostgreSQL with
FOR UPDATE SKIP LOCKED, so two reviewers never wait on or pick the same rows), then one
is claimed with a conditional UPDATE that succeeds only if it is still free; SQLite,
which has no row locks, relies on that compare-and-set alone. A hold that lapses
(PIWEB_REVIEW_HOLD_SECONDS) frees the item again, with no sweep: `free_items` counts a
lapsed hold as no hold.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from sessions_app.core.errors import ServiceError
from sessions_app.core.text import clean_text
from sessions_app.models import ReviewItem, ReviewQueue, Team
from sessions_app.selectors import review_queues as read
from sessions_app.selectors.scores import is_team_config
from sessions_app.selectors.sessions import ListFilters
from sessions_app.services import scores

MAX_ITEMS = 100_000
MAX_REVIEWS_PER_ITEM = 5
CANDIDATES = 20  # rows read per attempt to claim one (SQLite)
MAX_ATTEMPTS = 50


class QueueError(ServiceError):
    code = "queue"


def _require_admin(team: Team, actor) -> None:
    if read.member_role(team, actor) != "admin":
        raise QueueError(f"Only an admin of {team.name} can manage its review queues.", 403)


def _require_reviewer(queue: ReviewQueue, actor) -> None:
    if read.member_role(queue.team, actor) not in read.SCORING_ROLES:
        raise QueueError(f"Reviewing needs the reviewer role in {queue.team.name}.", 403)


@transaction.atomic
def create_queue(
    team: Team,
    *,
    actor,
    name: str,
    filters: ListFilters,
    scope: str = ReviewQueue.Scope.LEAF,
    reviews_per_item: int = 1,
) -> ReviewQueue:
    """A queue of the team's answers that `filters` select, `reviews_per_item` reviews each."""
    _require_admin(team, actor)
    name = clean_text(name or "").strip()[:200]
    if not name:
        raise QueueError("Give the queue a name.")
    if scope not in ReviewQueue.Scope.values:
        raise QueueError("A queue holds each session's last answer or every branch's.")
    if not 1 <= reviews_per_item <= MAX_REVIEWS_PER_ITEM:
        raise QueueError(f"Ask for 1 to {MAX_REVIEWS_PER_ITEM} reviews per answer.")
    if filters.problems:
        raise QueueError(" ".join(filters.problems))
    answers = read.answers_for(actor, team, filters, scope)
    if not answers:
        raise QueueError("No answer of the team's sessions matches this filter.")
    if len(answers) * reviews_per_item > MAX_ITEMS:
        raise QueueError(f"A queue holds at most {MAX_ITEMS:,} reviews: narrow the filter.")
    queue = ReviewQueue.objects.create(
        team=team,
        name=name,
        filters=filters.as_params(),
        scope=scope,
        reviews_per_item=reviews_per_item,
        created_by=actor,
    )
    ReviewItem.objects.bulk_create(
        ReviewItem(queue=queue, session_id=session_pk, entry_id=entry_pk, slot=slot, position=index)
        for index, (session_pk, entry_pk) in enumerate(answers)
        for slot in range(reviews_per_item)
    )
    return queue


def _reviewers(queue: ReviewQueue, usernames: list[str]) -> list:
    """These members, if each is in the queue's team with the reviewer role or higher."""
    users = read.reviewers_named(queue.team, usernames)
    if not users or len(users) != len(set(usernames)):
        raise QueueError("Assign to members of the team with the reviewer role or higher.")
    return users


@transaction.atomic
def assign(queue: ReviewQueue, usernames: list[str], *, actor) -> int:
    """Share the queue's open, unassigned items among these members in turn; returns how
    many were assigned."""
    _require_admin(queue.team, actor)
    users = _reviewers(queue, usernames)
    open_items = list(
        ReviewItem.objects.select_for_update()
        .filter(queue=queue, done_at=None, assigned_to=None)
        .order_by("position", "pk")
    )
    for index, item in enumerate(open_items):
        item.assigned_to = users[index % len(users)]
    ReviewItem.objects.bulk_update(open_items, ["assigned_to"])
    return len(open_items)


@transaction.atomic
def assign_item(queue: ReviewQueue, item_pk: int, username: str, *, actor) -> ReviewItem:
    """Assign one open item to one member (an empty name: to nobody, whoever is next
    takes it). An item someone else is reviewing right now is refused rather than taken
    from under them."""
    _require_admin(queue.team, actor)
    item = ReviewItem.objects.select_for_update().filter(queue=queue, pk=item_pk).first()
    if item is None:
        raise QueueError("No such item in this queue.", 404)
    if item.done_at is not None:
        raise QueueError("This item is reviewed already.", 409)
    assignee = _reviewers(queue, [username])[0] if username else None
    held = item.held_by_id is not None and item.held_at >= read.hold_cutoff()
    holder = item.held_by if held else None
    if holder is not None and holder.pk != getattr(assignee, "pk", None):
        raise QueueError(
            f"{holder.get_username()} is reviewing this item now: assign it once they "
            "are done or skip it.",
            409,
        )
    item.assigned_to = assignee
    item.save(update_fields=["assigned_to"])
    return item


def take_next(queue: ReviewQueue, *, actor) -> ReviewItem | None:
    """The item `actor` reviews now: the one they hold, else the next free one, claimed.
    None when nothing is left for them."""
    _require_reviewer(queue, actor)
    held = read.held_item(queue, actor)
    if held is not None:
        return held
    for _attempt in range(MAX_ATTEMPTS):
        with transaction.atomic():
            candidates = read.free_items(queue, actor)
            if connection.features.has_select_for_update_skip_locked:
                # one row, locked: others skip it and lock the next one
                candidates = candidates.select_for_update(skip_locked=True, of=("self",))[:1]
            else:
                candidates = candidates[:CANDIDATES]
            pks = list(candidates.values_list("pk", flat=True))
            for pk in pks:
                if _claim(queue, pk, actor):
                    return read.item_for_review(pk)
        if not pks and not read.has_free_items(queue, actor):
            return None
        # the rows left are being claimed by others this instant: read again
    raise QueueError("The queue is busy: try again.", 409)


def _claim(queue: ReviewQueue, pk: int, actor) -> bool:
    """Hold item `pk` for `actor` if it is still free for them (compare and set)."""
    claimed = (
        read.free_items(queue, actor).filter(pk=pk).update(held_by=actor, held_at=timezone.now())
    )
    return claimed == 1


def _own_item(queue: ReviewQueue, item_pk: int, actor) -> ReviewItem:
    """An item `actor` holds or has reviewed (locked)."""
    item = (
        ReviewItem.objects.select_for_update()
        .filter(queue=queue, pk=item_pk)
        .filter(Q(held_by=actor) | Q(done_by=actor))
        .first()
    )
    if item is None:
        raise QueueError("This item is not yours to review (any more): take the next one.", 409)
    return item


@transaction.atomic
def skip(queue: ReviewQueue, item_pk: int, *, actor) -> None:
    """Give the item back; it goes to the end of the queue."""
    _require_reviewer(queue, actor)
    item = _own_item(queue, item_pk, actor)
    if item.done_at is not None:
        raise QueueError("You already reviewed this item.", 409)
    last = read.last_position(queue)
    item.held_by, item.held_at, item.position = None, None, last + 1
    item.save(update_fields=["held_by", "held_at", "position"])


@transaction.atomic
def score_item(
    queue: ReviewQueue, item_pk: int, config_pk: int, raw_value: str, *, actor, comment=""
) -> ReviewItem:
    """Score the item's answer with one of the team's configs. The item is done once the
    reviewer has scored it with every config of the team."""
    _require_reviewer(queue, actor)
    item = _own_item(queue, item_pk, actor)
    if not is_team_config(queue.team, config_pk):
        raise QueueError(f"Score with one of {queue.team.name}'s scores.", 404)
    entry = item.entry
    scores.set_score(item.session, entry.pi_id, config_pk, raw_value, actor=actor, comment=comment)
    if item.done_at is None and read.scored_with_every_config(queue.team, entry, actor):
        item.done_by, item.done_at, item.held_by, item.held_at = actor, timezone.now(), None, None
        item.save(update_fields=["done_by", "done_at", "held_by", "held_at"])
    return item
