"""Review queues (docs/scores.md): a team's queues with their progress, building and
assigning one (admins), and reviewer mode: one item at a time, scored or skipped with
plain forms that come back to the next item, driven by the keyboard (review_mode.js)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from sessions_app.core.errors import NotFound
from sessions_app.models import ReviewQueue
from sessions_app.params import form, query
from sessions_app.presentation.review_mode import item_page
from sessions_app.responses import download, piweb_view
from sessions_app.selectors import datasets
from sessions_app.selectors import review_queues as read
from sessions_app.selectors.sessions import ListFilters
from sessions_app.selectors.teams import team_of_member
from sessions_app.services import review_queues


def _queue(request, queue_id: int) -> ReviewQueue:
    queue = read.queue_of_member(queue_id, request.user)
    if queue is None:
        raise NotFound("No such queue.")
    return queue


def _review_url(queue: ReviewQueue, item_pk: int | None = None) -> str:
    url = reverse("sessions_app:queue_review", args=[queue.pk])
    return f"{url}?item={item_pk}" if item_pk else url


@piweb_view()
def queues(request, team_id):
    team = team_of_member(team_id, request.user)
    if team is None:
        raise NotFound("No such team.")
    role = read.member_role(team, request.user)
    return render(
        request,
        "sessions_app/review_queues/queues.html",
        {
            "team": team,
            "queues": read.team_queues(team),
            "is_admin": role == "admin",
            "can_export": role in read.SCORING_ROLES,
            "scopes": ReviewQueue.Scope.choices,
        },
    )


@piweb_view(methods=("POST",))
def create(request, team_id):
    team = team_of_member(team_id, request.user)
    if team is None:
        raise NotFound("No such team.")
    params = form(request)
    queue = review_queues.create_queue(
        team,
        actor=request.user,
        name=params.stripped("name", limit=200),
        filters=ListFilters.from_params(request.POST),
        scope=params.choice("scope", ReviewQueue.Scope.values, ReviewQueue.Scope.LEAF),
        reviews_per_item=params.integer("reviews_per_item", 1),
    )
    messages.success(request, f"Created the queue {queue.name} ({queue.items.count()} items).")
    return redirect("sessions_app:queues", team.pk)


@piweb_view(methods=("POST",))
def assign(request, queue_id):
    queue = _queue(request, queue_id)
    names = [n.strip() for n in form(request).text("usernames", limit=2000).split(",")]
    count = review_queues.assign(queue, [n for n in names if n], actor=request.user)
    messages.success(request, f"Assigned {count} items of {queue.name}.")
    return redirect("sessions_app:queues", queue.team_id)


ITEMS_PAGE = 100


@piweb_view()
def items(request, queue_id):
    """The queue's items, a page at a time, each with its assignee; admins assign each
    one to a member (or to nobody: whoever is next)."""
    queue = _queue(request, queue_id)
    is_admin = read.member_role(queue.team, request.user) == "admin"
    page = Paginator(read.queue_items(queue), ITEMS_PAGE).get_page(query(request).text("page"))
    return render(
        request,
        "sessions_app/review_queues/items.html",
        {
            "queue": queue,
            "page": page,
            "is_admin": is_admin,
            "reviewers": read.team_reviewers(queue.team) if is_admin else [],
            "hold_cutoff": read.hold_cutoff(),
        },
    )


@piweb_view(methods=("POST",))
def assign_item(request, queue_id, item_id):
    queue = _queue(request, queue_id)
    params = form(request)
    item = review_queues.assign_item(
        queue, item_id, params.stripped("username", limit=150), actor=request.user
    )
    who = item.assigned_to.get_username() if item.assigned_to else "whoever is next"
    messages.success(request, f"The answer {item.entry.pi_id} of {queue.name} goes to {who}.")
    back = reverse("sessions_app:queue_items", args=[queue.pk])
    page = params.text("page", limit=10)
    return redirect(f"{back}?page={page}" if page.isdigit() else back)


def _shown_item(request, queue: ReviewQueue):
    """The item asked for (one this reviewer reviewed: going back with k), else the one
    they review now (None when nothing is left for them)."""
    asked = query(request).integer("item")
    found = read.reviewed_item(queue, request.user, asked) if asked is not None else None
    return found or review_queues.take_next(queue, actor=request.user)


def _neighbours(queue: ReviewQueue, user, item) -> tuple[str, str]:
    """Where k (the previous item reviewed) and j (the next one) lead from `item`."""
    history = read.reviewed_items(queue, user)
    at = history.index(item.pk) if item is not None and item.pk in history else len(history)
    previous = _review_url(queue, history[at - 1]) if at > 0 else ""
    following = history[at + 1] if at + 1 < len(history) else None
    return previous, _review_url(queue, following)


@piweb_view()
def review(request, queue_id):
    queue = _queue(request, queue_id)
    item = _shown_item(request, queue)
    previous, following = _neighbours(queue, request.user, item)
    context = {
        "queue": queue,
        "progress": read.progress(queue, request.user),
        "previous_url": previous,
        "next_url": following,
        **(item_page(queue, item, request.user) if item is not None else {"item": None}),
    }
    return render(request, "sessions_app/review_queues/review.html", context)


@piweb_view(methods=("POST",))
def score(request, queue_id, item_id):
    queue = _queue(request, queue_id)
    params = form(request)
    item = review_queues.score_item(
        queue,
        item_id,
        params.integer("config", 0),
        params.text("value", limit=100),
        actor=request.user,
        comment=params.text("comment", limit=4001),
    )
    # a finished item leads to the next one; one still missing scores stays
    return redirect(_review_url(queue, None if item.done_at else item.pk))


@piweb_view(methods=("POST",))
def skip(request, queue_id, item_id):
    queue = _queue(request, queue_id)
    review_queues.skip(queue, item_id, actor=request.user)
    return redirect(_review_url(queue))


def _require_reviewer(team, user) -> None:
    if read.member_role(team, user) not in read.SCORING_ROLES:
        raise PermissionDenied("Datasets are for the team's reviewers, editors and admins.")


def _dataset_download(request, answers, team_id: int, name: str):
    """Scored `answers` as streamed JSONL (`?format=chat|finetune`, `?min=NAME=X`)."""
    params = query(request)
    fmt = params.choice("format", datasets.FORMATS, "chat")
    minimums = datasets.parse_minimums(
        [params.text("min", limit=100)] if params.text("min") else []
    )
    rows = datasets.dataset_rows(answers, team_id, minimums)
    response = StreamingHttpResponse(
        (line.encode() for line in datasets.dataset_lines(rows, fmt)),
        content_type="application/jsonl; charset=utf-8",
    )
    return download(response, f"{name}-{fmt}.jsonl")


@piweb_view()
def dataset(request, queue_id):
    """The queue's scored answers as JSONL, streamed. Its team's reviewers and up
    download it."""
    queue = _queue(request, queue_id)
    _require_reviewer(queue.team, request.user)
    return _dataset_download(
        request, datasets.queue_answers(queue), queue.team_id, f"queue-{queue.pk}"
    )


@piweb_view()
def filter_dataset(request, team_id):
    """The scored answers of the team's sessions that a filter selects (the queue
    builder's filter), as JSONL, streamed; like `export_dataset --team T --filter …`."""
    team = team_of_member(team_id, request.user)
    if team is None:
        raise NotFound("No such team.")
    _require_reviewer(team, request.user)
    filters = ListFilters.from_params(request.GET)
    if filters.problems:
        raise datasets.DatasetError(" ".join(filters.problems))
    answers = datasets.filter_answers(request.user, team, filters)
    return _dataset_download(request, answers, team.pk, f"team-{team.pk}-filter")
