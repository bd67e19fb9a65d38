"""Scores: a team's score configs (its admins manage them) and the scores its reviewers
give entries and branches (docs/scores.md).

Like comments, scores live in their own tables and never reach the model's context. Who
scores with a team's configs: a member whose team role is reviewer or higher, on a
session shared with that team (whatever the share's role) or owned by them.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from sessions_app.core import scores as values
from sessions_app.core.errors import ServiceError
from sessions_app.core.text import clean_text
from sessions_app.models import Score, ScoreConfig, Session, Team, TeamMembership
from sessions_app.selectors import scores as read
from sessions_app.selectors.entries import find_entry
from sessions_app.selectors.review_queues import member_role
from sessions_app.services.sessions import lock_session, record_activity

MAX_NAME = 60
MAX_DESCRIPTION = 2000
MAX_COMMENT = 4000
SCORING_ROLES = (
    TeamMembership.Role.REVIEWER,
    TeamMembership.Role.EDITOR,
    TeamMembership.Role.ADMIN,
)


class ScoreError(ServiceError):
    code = "score"


def require_team_admin(team: Team, actor) -> None:
    if member_role(team, actor) != TeamMembership.Role.ADMIN:
        raise ScoreError(f"Only an admin of {team.name} can change its score configs.", 403)


def _number(value) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ScoreError(f"{str(value)[:20]!r} is not a number.") from None


@transaction.atomic
def create_config(
    team: Team,
    *,
    actor,
    name: str,
    kind: str,
    min_value=None,
    max_value=None,
    categories: str = "",
    description: str = "",
) -> ScoreConfig:
    require_team_admin(team, actor)
    name = clean_text(name or "").strip()[:MAX_NAME]
    if not name:
        raise ScoreError("Give the score a name.")
    names = values.parse_categories(clean_text(categories or "")) if kind == "category" else []
    low, high = (_number(min_value), _number(max_value)) if kind == "number" else (None, None)
    values.check_config(kind, low, high, names)
    if read.config_name_taken(team, name):
        raise ScoreError(f"{team.name} already has a score called {name}.")
    try:
        with transaction.atomic():
            return ScoreConfig.objects.create(
                team=team,
                name=name,
                kind=kind,
                min_value=low,
                max_value=high,
                categories=names,
                description=clean_text(description or "").strip()[:MAX_DESCRIPTION],
            )
    except IntegrityError as exc:
        raise ScoreError(f"{team.name} already has a score called {name}.") from exc


@transaction.atomic
def update_config(
    team: Team,
    config_pk: int,
    *,
    actor,
    name: str,
    min_value=None,
    max_value=None,
    categories: str = "",
    description: str = "",
) -> ScoreConfig:
    """Rename a config, redescribe it, or change its range or categories. Its kind stays
    (its scores are stored in that kind); a change that would leave a given score outside
    the range or categories is refused, so no score is lost or reinterpreted."""
    require_team_admin(team, actor)
    config = ScoreConfig.objects.select_for_update().filter(team=team, pk=config_pk).first()
    if config is None:
        raise ScoreError("No such score config.", 404)
    name = clean_text(name or "").strip()[:MAX_NAME]
    if not name:
        raise ScoreError("Give the score a name.")
    kind = config.kind
    names = values.parse_categories(clean_text(categories or "")) if kind == "category" else []
    low, high = (_number(min_value), _number(max_value)) if kind == "number" else (None, None)
    values.check_config(kind, low, high, names)
    if read.config_name_taken(team, name, besides=config.pk):
        raise ScoreError(f"{team.name} already has a score called {name}.")
    orphaned = read.scores_outside(config, low, high, names)
    if orphaned:
        raise ScoreError(
            f"{orphaned} score(s) given with {config.name} would fall outside the new "
            "range or categories: keep them in, or delete those scores first."
        )
    if kind == "category":
        _renumber_category_scores(config, names)
    config.name, config.min_value, config.max_value, config.categories = name, low, high, names
    config.description = clean_text(description or "").strip()[:MAX_DESCRIPTION]
    config.save()
    return config


def _renumber_category_scores(config: ScoreConfig, names: list[str]) -> None:
    """A category score's number is its category's index: keep it right when the
    categories are reordered or added to (labels follow the new spelling)."""
    index = {name.lower(): (number, name) for number, name in enumerate(names)}
    for score in read.config_scores(config):
        number, label = index[score.label.lower()]
        if (score.value, score.label) != (float(number), label):
            Score.objects.filter(pk=score.pk).update(value=float(number), label=label)


@transaction.atomic
def delete_config(team: Team, config_pk: int, *, actor) -> None:
    """Delete a config and every score given with it."""
    require_team_admin(team, actor)
    deleted, _ = ScoreConfig.objects.filter(team=team, pk=config_pk).delete()
    if not deleted:
        raise ScoreError("No such score config.", 404)


def _scoring_config(session: Session, config_pk: int, actor) -> ScoreConfig:
    """The config if `actor` may score `session` with it, else a refusal."""
    config = read.config_with_team(config_pk)
    if config is None:
        raise ScoreError("No such score config.", 404)
    if member_role(config.team, actor) not in SCORING_ROLES:
        raise ScoreError(f"Scoring with {config.team.name}'s scores needs its reviewer role.", 403)
    shared = read.shared_with_team(session, config.team)
    if not shared and session.owner_id != actor.pk:
        raise ScoreError(f"This session is not shared with {config.team.name}.", 403)
    return config


@transaction.atomic
def set_score(
    session: Session,
    entry_pi_id: str,
    config_pk: int,
    raw_value: str,
    *,
    actor,
    target: str = Score.Target.ENTRY,
    comment: str = "",
) -> Score:
    """Score an entry (or the branch ending at it); scoring again replaces one's own score."""
    locked = lock_session(session.pk)
    config = _scoring_config(locked, config_pk, actor)
    if target not in Score.Target.values:
        raise ScoreError("A score is on an entry or on a branch.")
    entry = find_entry(locked, entry_pi_id)
    if entry is None:
        raise ScoreError(f"No entry {str(entry_pi_id)[:64]!r} in this session.", 404)
    number, label = values.parse_value(
        config.kind, raw_value, config.min_value, config.max_value, config.categories
    )
    comment = clean_text(comment or "").strip()
    if len(comment) > MAX_COMMENT:
        raise ScoreError(f"A score's comment is limited to {MAX_COMMENT:,} characters.")
    score, _ = Score.objects.update_or_create(
        config=config,
        entry=entry,
        target=target,
        author=actor,
        defaults={"session": locked, "value": number, "label": label, "comment": comment},
    )
    record_activity(
        locked, actor, "scored", entry=entry.pi_id, score=config.name, value=label or number
    )
    return score


@transaction.atomic
def delete_score(session: Session, score_pk: int, *, actor) -> None:
    """Take back one's own score."""
    locked = lock_session(session.pk)
    score = read.own_score(locked, score_pk, actor)
    if score is None:
        raise ScoreError("No such score of yours in this session.", 404)
    score.delete()
    record_activity(locked, actor, "unscored", entry=score.entry.pi_id, score=score.config.name)
