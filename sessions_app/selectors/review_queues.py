"""Reading review queues: a team's queues with their progress, the answers a filter
selects for a new queue, the item a reviewer may take next and reviewer mode's page
(writing them: `services/review_queues.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count, Exists, Max, OuterRef, Q
from django.utils import timezone

from sessions_app.models import (
    Entry,
    ReviewItem,
    ReviewQueue,
    Score,
    ScoreConfig,
    Session,
    Team,
    TeamMembership,
)
from sessions_app.selectors.sessions import ListFilters, visible_list
from sessions_app.selectors.teams import team_sessions

SCORING_ROLES = ("reviewer", "editor", "admin")


def hold_cutoff():
    """Holds older than this have lapsed: their items are free again."""
    return timezone.now() - timedelta(seconds=settings.PIWEB_REVIEW_HOLD_SECONDS)


def member_role(team: Team, user) -> str | None:
    """The user's role in the team, None for a non-member (or no user)."""
    if getattr(user, "pk", None) is None:
        return None
    return (
        TeamMembership.objects.filter(team=team, user_id=user.pk)
        .values_list("role", flat=True)
        .first()
    )


def queue_of_member(queue_id: int, user) -> ReviewQueue | None:
    """The queue when `user` is in its team (others are not shown to them at all)."""
    return (
        ReviewQueue.objects.select_related("team").filter(pk=queue_id, team__members=user).first()
    )


def team_queues(team: Team) -> list[ReviewQueue]:
    """The team's queues, each with `total` and `done` item counts."""
    return list(
        ReviewQueue.objects.filter(team=team).annotate(
            total=Count("items"), done=Count("items", filter=~Q(items__done_at=None))
        )
    )


def answers_for(user, team: Team, filters: ListFilters, scope: str) -> list[tuple[int, int]]:
    """(session pk, entry pk) of the assistant answers a new queue holds: of the team's
    sessions that match `filters` (as `user` sees them), each session's leaf when it is
    an answer, or every answer that ends a branch; in session then append order."""
    sessions = visible_list(user, filters).filter(pk__in=team_sessions(team).values("pk"))
    answers = Entry.objects.filter(
        session__in=sessions.values("pk"), type="message", role="assistant"
    )
    if scope == ReviewQueue.Scope.LEAF:
        answers = answers.filter(pk__in=Session.objects.values("leaf_id"))
    else:
        children = Entry.objects.filter(session_id=OuterRef("session_id"), parent_id=OuterRef("pk"))
        answers = answers.filter(~Exists(children))
    return list(answers.order_by("session_id", "seq").values_list("session_id", "pk"))


def free_items(queue: ReviewQueue, user):
    """The queue's items `user` may take now, in order: not done, not held (or held too
    long), assigned to nobody or to them, and not another review slot of an answer they
    hold or have reviewed."""
    cutoff = hold_cutoff()
    mine = ReviewItem.objects.filter(queue=queue).filter(
        Q(done_by=user) | Q(held_by=user, held_at__gte=cutoff)
    )
    return (
        ReviewItem.objects.filter(queue=queue, done_at=None)
        .filter(Q(held_by=None) | Q(held_at__lt=cutoff))
        .filter(Q(assigned_to=None) | Q(assigned_to=user))
        .exclude(entry_id__in=mine.values("entry_id"))
        .order_by("position", "pk")
    )


def has_free_items(queue: ReviewQueue, user) -> bool:
    """Whether anything in the queue is free for `user` to take."""
    return free_items(queue, user).exists()


def queue_items(queue: ReviewQueue):
    """The queue's items in handing-out order, with what their list shows: the session,
    the answer, the assignee, who holds or reviewed it."""
    return (
        ReviewItem.objects.filter(queue=queue)
        .select_related("session", "entry", "assigned_to", "held_by", "done_by")
        .order_by("position", "pk")
    )


def team_reviewers(team: Team) -> list[str]:
    """Usernames of the team's members who may review (an item's possible assignees)."""
    return list(
        TeamMembership.objects.filter(team=team, role__in=SCORING_ROLES)
        .order_by("user__username")
        .values_list("user__username", flat=True)
    )


def reviewers_named(team: Team, usernames: list[str]) -> list:
    """The users of these names who are in `team` with the reviewer role or higher."""
    return list(
        get_user_model().objects.filter(
            username__in=usernames,
            teammembership__team=team,
            teammembership__role__in=SCORING_ROLES,
        )
    )


def item_for_review(item_pk: int) -> ReviewItem:
    """The item `item_pk` with its session and entry (it exists: the caller claimed it)."""
    return ReviewItem.objects.select_related("session", "entry").get(pk=item_pk)


def last_position(queue: ReviewQueue) -> int:
    """The highest position in the queue (asked about a queue that holds an item)."""
    return ReviewItem.objects.filter(queue=queue).aggregate(last=Max("position"))["last"]


def scored_with_every_config(team: Team, entry: Entry, user) -> bool:
    """Whether `user` has scored `entry` with every one of the team's configs."""
    return not (
        ScoreConfig.objects.filter(team=team)
        .exclude(
            scores__in=Score.objects.filter(entry=entry, author=user, target=Score.Target.ENTRY)
        )
        .exists()
    )


def held_item(queue: ReviewQueue, user) -> ReviewItem | None:
    """The item `user` holds in this queue (a hold that has not lapsed), if any."""
    return (
        ReviewItem.objects.filter(queue=queue, held_by=user, held_at__gte=hold_cutoff())
        .filter(done_at=None)
        .first()
    )


def reviewed_items(queue: ReviewQueue, user) -> list[int]:
    """The pks of the items `user` reviewed in this queue, in the order they did."""
    return list(
        ReviewItem.objects.filter(queue=queue, done_by=user)
        .order_by("done_at", "pk")
        .values_list("pk", flat=True)
    )


@dataclass
class Progress:
    total: int
    done: int
    mine: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 100


def progress(queue: ReviewQueue, user) -> Progress:
    counts = ReviewItem.objects.filter(queue=queue).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=~Q(done_at=None)),
        mine=Count("pk", filter=Q(done_by=user)),
    )
    return Progress(**counts)


def item_scores(queue: ReviewQueue, item: ReviewItem, user) -> list[ScoreConfig]:
    """The team's score configs, each with `given`: this reviewer's score of the answer."""
    configs = list(ScoreConfig.objects.filter(team=queue.team))
    given = {
        s.config_id: s
        for s in Score.objects.filter(
            entry_id=item.entry_id, author=user, target=Score.Target.ENTRY, config__in=configs
        )
    }
    for config in configs:
        config.given = given.get(config.pk)
    return configs


def reviewed_item(queue: ReviewQueue, user, item_pk: int) -> ReviewItem | None:
    """One item `user` reviewed in this queue (reviewer mode going back), else None."""
    return (
        ReviewItem.objects.select_related("session", "entry")
        .filter(queue=queue, done_by=user, pk=item_pk)
        .first()
    )
