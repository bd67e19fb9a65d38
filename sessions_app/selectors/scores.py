"""Reading scores: a team's configs, the configs someone may score a session with, the
badges of a session's entries (writing them: `services/scores.py`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Avg, Count, Q
from django.db.models.functions import TruncDate

from sessions_app.core import scores as values
from sessions_app.models import (
    Score,
    ScoreConfig,
    Session,
    SessionShare,
    Team,
    TeamMembership,
)

SCORING_ROLES = ("reviewer", "editor", "admin")


def team_configs(team: Team) -> list[ScoreConfig]:
    return list(ScoreConfig.objects.filter(team=team))


def config_name_taken(team: Team, name: str, *, besides: int | None = None) -> bool:
    """Whether another of the team's configs (not `besides`) has this name, in any case."""
    same = ScoreConfig.objects.filter(team=team, name__iexact=name)
    if besides is not None:
        same = same.exclude(pk=besides)
    return same.exists()


def is_team_config(team: Team, config_pk: int) -> bool:
    """Whether `config_pk` is one of the team's configs."""
    return ScoreConfig.objects.filter(pk=config_pk, team=team).exists()


def config_with_team(config_pk: int) -> ScoreConfig | None:
    """The config `config_pk`, with its team, or None."""
    return ScoreConfig.objects.select_related("team").filter(pk=config_pk).first()


def config_scores(config: ScoreConfig) -> list[Score]:
    """Every score given with `config`."""
    return list(Score.objects.filter(config=config))


def scores_outside(config: ScoreConfig, low, high, names: list[str]) -> int:
    """How many of the config's scores a new range (`low`..`high`) or category list
    (`names`) would no longer hold."""
    given = Score.objects.filter(config=config)
    if config.kind == "number":
        return given.filter(Q(value__lt=low) | Q(value__gt=high)).count()
    if config.kind == "category":
        kept = {name.lower() for name in names}
        return sum(
            1 for label in given.values_list("label", flat=True) if label.lower() not in kept
        )
    return 0


def shared_with_team(session: Session, team: Team) -> bool:
    """Whether `session` is shared with `team` (whatever the share's role)."""
    return SessionShare.objects.filter(session=session, team=team).exists()


def own_score(session: Session, score_pk: int, author) -> Score | None:
    """`author`'s score `score_pk` in `session`, or None."""
    return Score.objects.filter(pk=score_pk, session=session, author=author).first()


def scoring_configs(user, session: Session) -> list[ScoreConfig]:
    """The configs `user` may score this session with: those of the teams the session is
    shared with (every team of theirs, for the owner) where their role is reviewer or up."""
    if not getattr(user, "is_authenticated", False):
        return []
    teams = TeamMembership.objects.filter(user=user, role__in=SCORING_ROLES).values("team_id")
    shared = Q(team__shares__session=session)
    if session.owner_id == user.pk:
        shared = Q()
    return list(
        ScoreConfig.objects.filter(shared, team_id__in=teams)
        .select_related("team")
        .distinct()
        .order_by("team__name", "name", "pk")
    )


@dataclass
class Badge:
    """One config's scores on one entry (or its branch): their mean, and who gave them."""

    config: str
    target: str
    values: list[float] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        if self.labels and all(self.labels):
            distinct = sorted(set(self.labels))
            return distinct[0] if len(distinct) == 1 else f"{len(distinct)} answers"
        return values.shown(round(sum(self.values) / len(self.values), 1))

    @property
    def title(self) -> str:
        on = "branch" if self.target == Score.Target.BRANCH else "entry"
        return f"{self.config} ({on}) by {', '.join(self.authors)}"


def badges_by_entry(session: Session, key: str = "entry_id") -> dict:
    """{entry (pk, or `key="entry__pi_id"`): [Badge, …]} for the whole session."""
    rows = (
        Score.objects.filter(session=session)
        .order_by("config__name", "target", "created_at")
        .values_list(key, "config__name", "target", "value", "label", "author__username")
    )
    found: dict = defaultdict(dict)
    for entry, config, target, value, label, author in rows:
        badge = found[entry].setdefault((config, target), Badge(config, target))
        badge.values.append(value)
        badge.labels.append(label)
        badge.authors.append(author)
    return {entry: list(by_config.values()) for entry, by_config in found.items()}


def entry_scores(session: Session, entry_pi_id: str) -> list[Score]:
    """Every score on one entry, with its config and author."""
    return list(
        Score.objects.filter(session=session, entry__pi_id=entry_pi_id)
        .select_related("config", "author")
        .order_by("config__name", "target", "created_at")
    )


def scores_by_model(sessions, score_filter: str = "") -> list[dict]:
    """Entry scores of answers in `sessions` (a queryset), per score name and model: how
    many, their mean, and how many meet `score_filter` ("quality<3") when one is given."""
    scores = Score.objects.filter(session__in=sessions.values("pk"), target=Score.Target.ENTRY)
    meeting = Q()
    scored = values.parse_score_filter(score_filter)  # None for a blank filter
    if scored is not None:
        name, lookup, number = scored
        meeting = Q(config__name__iexact=name, **{f"value__{lookup}": number})
    rows = (
        scores.values("config__name", "entry__usage_key")
        .annotate(count=Count("pk"), mean=Avg("value"), meeting=Count("pk", filter=meeting))
        .order_by("config__name", "entry__usage_key")
    )
    return [
        {
            "score": r["config__name"],
            "model": r["entry__usage_key"] or "(unknown)",
            "count": r["count"],
            "mean": round(r["mean"], 2),
            "meeting": r["meeting"] if score_filter else None,
        }
        for r in rows
    ]


def scores_over_time(sessions) -> dict:
    """The uPlot series of the usage page's scores chart: per score and model, each day's
    mean entry score (None on days without one), over the days that have scores."""
    rows = (
        Score.objects.filter(session__in=sessions.values("pk"), target=Score.Target.ENTRY)
        .annotate(day=TruncDate("created_at"))
        .values("day", "config__name", "entry__usage_key")
        .annotate(mean=Avg("value"))
        .order_by("day")
    )
    days: list[str] = []
    lines: dict[str, dict[str, float]] = defaultdict(dict)
    for row in rows:
        day = row["day"].isoformat()
        if not days or days[-1] != day:
            days.append(day)
        label = f"{row['config__name']} · {row['entry__usage_key'] or '(unknown)'}"
        lines[label][day] = round(row["mean"], 2)
    return {
        "days": days,
        "series": [
            {"label": label, "values": [by_day.get(day) for day in days]}
            for label, by_day in sorted(lines.items())
        ],
    }
