"""The sessions list: what a user can see (`visible_sessions`, the visibility filter of the
permission gate), filtered, sorted and paged in SQL.

Every filter and sort reads a column of the session row (usage totals and times are
stored there by services/usage.py), so a page costs one indexed query and one count,
however many sessions there are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from django.core.cache import cache
from django.db.models import Exists, F, OuterRef, Q

from sessions_app.core.errors import ServiceError
from sessions_app.core.scores import parse_score_filter
from sessions_app.core.text import clean_text
from sessions_app.models import Entry, Score, Session, SessionShare, TeamMembership, UsageDaily


def visible_sessions(user):
    """Sessions `user` may read: owned, or shared with one of their teams."""
    if not user.is_authenticated:
        return Session.objects.none()
    # A semi-join, not a JOIN + DISTINCT: the row estimate stays sane, so callers can put
    # it inside bigger queries (search filters a million entries through it).
    shared = SessionShare.objects.filter(team__members=user).values("session_id")
    return Session.objects.filter(Q(owner=user) | Q(pk__in=shared))


# Sort name -> the expression it orders by (descending first is the natural order).
SORTS = {
    "name": "name",
    "started": "started_at",
    "last": "last_activity_at",
    "entries": "entry_count",
    "tokens": "usage_tokens",
    "cost": "usage_cost",
    "owner": "owner__username",
}
DEFAULT_SORT = "-last"
MAX_CHOICES = 500
MAX_PROJECT_CHARS = 1000  # the longest cwd the project filter takes
MAX_MODEL_CHARS = 200
CHOICES_SECONDS = 60


@dataclass
class ListFilters:
    query: str = ""
    source: str = ""
    project: str = ""
    model: str = ""
    start: date | None = None
    end: date | None = None
    sort: str = DEFAULT_SORT
    archived: str = ""  # "" hides archived sessions, "only" shows only them, "all" both
    pinned: bool = False
    tag: str = ""
    score: str = ""  # sessions with an answer scored so: "quality<3" (core/scores.py)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def from_params(cls, params) -> ListFilters:
        found = cls(
            # clean_text: a NUL (or a lone surrogate) is no text any database accepts.
            query=clean_text(params.get("q", "").strip()[:200]),
            source=params.get("source", ""),
            project=clean_text(params.get("project", "")[:MAX_PROJECT_CHARS]),
            model=clean_text(params.get("model", "")[:MAX_MODEL_CHARS]),
        )
        found.archived = params.get("archived", "")
        if found.archived not in ("", "only", "all"):
            found.archived = ""
        found.pinned = params.get("pinned", "") in ("1", "on", "true")
        found.tag = clean_text(params.get("tag", "").strip().lstrip("#").lower()[:32])
        found.score = clean_text(params.get("score", "").strip()[:80])
        try:
            parse_score_filter(found.score)
        except ServiceError as exc:
            found.problems.append(f"{exc} The score filter is ignored.")
            found.score = ""
        if found.source not in Session.Source.values:
            found.source = ""
        found.start = found._day(params.get("from", ""), "from")
        found.end = found._day(params.get("to", ""), "to")
        sort = params.get("sort", DEFAULT_SORT)
        found.sort = sort if sort.lstrip("-") in SORTS else DEFAULT_SORT
        return found

    def _day(self, value: str, name: str) -> date | None:
        if not value:
            return None
        try:
            return date.fromisoformat(value)
        except ValueError:
            self.problems.append(f"“{value[:20]}” is not a date (YYYY-MM-DD); {name} ignored.")
            return None

    def as_params(self, **override) -> dict[str, str]:
        """The filters as URL parameters (empty ones left out)."""
        values = {
            "q": self.query,
            "source": self.source,
            "project": self.project,
            "model": self.model,
            "from": self.start.isoformat() if self.start else "",
            "to": self.end.isoformat() if self.end else "",
            "sort": "" if self.sort == DEFAULT_SORT else self.sort,
            "archived": self.archived,
            "pinned": "1" if self.pinned else "",
            "tag": self.tag,
            "score": self.score,
        }
        values.update(override)
        return {k: v for k, v in values.items() if v}


def day_bounds(start: date | None, end: date | None) -> tuple[datetime | None, datetime | None]:
    """[start of `start`, start of the day after `end`) in UTC."""
    low = datetime.combine(start, time(), UTC) if start else None
    high = datetime.combine(end + timedelta(days=1), time(), UTC) if end else None
    return low, high


def visible_list(user, filters: ListFilters):
    """The visible sessions matching `filters`, in their order."""
    # The page shows neither the header line nor the settings: left in the table.
    sessions = (
        visible_sessions(user)
        .select_related("owner")
        .defer("header_line", "settings", "import_sha256", "parent_session_ref")
    )
    if filters.query:
        text_match = Entry.objects.filter(session=OuterRef("pk"), preview__icontains=filters.query)
        sessions = sessions.filter(
            Q(name__icontains=filters.query)
            | Q(first_message__icontains=filters.query)
            | Q(cwd__icontains=filters.query)
            | Q(pi_id__startswith=filters.query)
            | Exists(text_match)
        )
    if filters.archived == "":
        sessions = sessions.filter(archived=False)
    elif filters.archived == "only":
        sessions = sessions.filter(archived=True)
    if filters.pinned:
        sessions = sessions.filter(pinned=True)
    if filters.tag:
        sessions = sessions.filter(tags__contains=f"\n{filters.tag}\n")
    if filters.source:
        sessions = sessions.filter(source=filters.source)
    if filters.project:
        sessions = sessions.filter(cwd=filters.project)
    if filters.model:
        sessions = sessions.filter(
            Exists(UsageDaily.objects.filter(session=OuterRef("pk"), key=filters.model))
        )
    if filters.score:
        sessions = sessions.filter(Exists(scored_so(filters.score).filter(session=OuterRef("pk"))))
    low, high = day_bounds(filters.start, filters.end)
    # Sessions whose own time span [start, last activity] meets the range.
    if low:
        sessions = sessions.filter(last_activity_at__gte=low)
    if high:
        sessions = sessions.filter(started_at__lt=high)
    name = filters.sort.lstrip("-")
    column = F(SORTS[name])
    order = column.desc(nulls_last=True) if filters.sort.startswith("-") else column.asc()
    # Pinned sessions lead the list, each part in the chosen order.
    return sessions.order_by("-pinned", order, "-pk" if filters.sort.startswith("-") else "pk")


def scored_so(score_filter: str):
    """The scores that meet a score filter such as "quality<3" (entry scores)."""
    scored = parse_score_filter(score_filter)
    if scored is None:  # a blank filter: every entry score
        return Score.objects.filter(target=Score.Target.ENTRY)
    name, lookup, number = scored
    return Score.objects.filter(
        config__name__iexact=name, target=Score.Target.ENTRY, **{f"value__{lookup}": number}
    )


def session_audience(session_pks: list[int]) -> set[int]:
    """The users whose sessions list may show any of these sessions: the owners, and the
    members of the teams they are shared with."""
    if not session_pks:
        return set()
    owners = Session.objects.filter(pk__in=session_pks).values_list("owner_id", flat=True)
    teams = SessionShare.objects.filter(session_id__in=session_pks).values("team_id")
    members = TeamMembership.objects.filter(team_id__in=teams).values_list("user_id", flat=True)
    return set(owners.union(members))


def list_choices(user) -> tuple[list[str], list[str]]:
    """(projects, models) found in the sessions `user` can see, for the filter menus.
    Reading them means a pass over every visible session, so they are kept for
    CHOICES_SECONDS per user: a new project or model reaches the menus within that."""
    # The join date tells apart two users that got the same id (a test database).
    key = f"piweb:list-choices:{user.pk}:{user.date_joined.timestamp()}"
    cached = cache.get(key)
    if cached is None:
        cached = _list_choices(user)
        cache.set(key, cached, CHOICES_SECONDS)
    return cached


def _list_choices(user) -> tuple[list[str], list[str]]:
    projects: set[str] = set()
    models: set[str] = set()
    pairs = visible_sessions(user).values_list("cwd", "usage_models").distinct()
    for cwd, joined in pairs.iterator(chunk_size=2000):
        # A value longer than the filter accepts could not be chosen: it is left out.
        if cwd and len(cwd) <= MAX_PROJECT_CHARS and len(projects) < MAX_CHOICES:
            projects.add(cwd)
        if joined and len(models) < MAX_CHOICES:
            models.update(m for m in joined.split("\n") if len(m) <= MAX_MODEL_CHARS)
    return sorted(projects), sorted(models)


def session_by_pi_id(pi_id: str) -> Session | None:
    """The session with this pi id (any owner's), or None."""
    return Session.objects.filter(pi_id=pi_id).first()


def session_by_pk(pk: int) -> Session:
    """The session `pk` (Session.DoesNotExist when it is gone)."""
    return Session.objects.get(pk=pk)


def owned_session_among(pi_ids, owner) -> Session | None:
    """One of `owner`'s sessions whose pi id is among `pi_ids`, or None."""
    return Session.objects.filter(pi_id__in=pi_ids, owner=owner).first()


def imported_before(sha256: str, owner) -> Session | None:
    """`owner`'s session imported from a file with this sha256 (pk and pi id only), or
    None."""
    return Session.objects.filter(import_sha256=sha256, owner=owner).only("pk", "pi_id").first()


def stored_pi_ids(pi_ids) -> set[str]:
    """Those of `pi_ids` that a stored session (anyone's) has."""
    return set(Session.objects.filter(pi_id__in=pi_ids).values_list("pi_id", flat=True))


def session_exists(pk: int) -> bool:
    """Whether the session `pk` is still there."""
    return Session.objects.filter(pk=pk).exists()
