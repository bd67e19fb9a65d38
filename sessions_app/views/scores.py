"""Scores: an entry's scores with the controls of the configs the caller may score with,
giving and taking back a score, and a team's score configs (its admins manage them on
the teams page). Every view goes through the gate; thin: parse, call, render."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render

from sessions_app.core.errors import NotFound
from sessions_app.models import Score
from sessions_app.params import form
from sessions_app.responses import REVIEWER, piweb_view, session_view
from sessions_app.selectors.entries import get_entry_or_404
from sessions_app.selectors.scores import entry_scores, scoring_configs
from sessions_app.selectors.teams import team_of_member
from sessions_app.services import scores


def _scores_context(request, access, entry, error: str = "") -> dict:
    return {
        "session": access.session,
        "entry": entry,
        "scores": entry_scores(access.session, entry.pi_id),
        "configs": scoring_configs(request.user, access.session) if access.can_score else [],
        "targets": Score.Target.choices,
        "error": error,
    }


@session_view()
def entry_scores_view(request, access, entry_id):
    """The scores of one entry, for members (a share link's page draws its own badges,
    when the link says so)."""
    entry = get_entry_or_404(access.session, entry_id)
    return render(
        request, "sessions_app/scores/_entry.html", _scores_context(request, access, entry)
    )


@session_view(REVIEWER, methods=("POST",))
def set_score(request, access, entry_id):
    entry = get_entry_or_404(access.session, entry_id)
    params = form(request)
    scores.set_score(
        access.session,
        entry.pi_id,
        params.integer("config"),
        params.text("value", limit=100),
        actor=request.user,
        target=params.choice("target", Score.Target.values, Score.Target.ENTRY),
        comment=params.text("comment", limit=scores.MAX_COMMENT + 1),
    )
    return render(
        request, "sessions_app/scores/_entry.html", _scores_context(request, access, entry)
    )


@session_view(REVIEWER, methods=("POST",))
def delete_score(request, access, entry_id, score_id):
    entry = get_entry_or_404(access.session, entry_id)
    scores.delete_score(access.session, score_id, actor=request.user)
    return render(
        request, "sessions_app/scores/_entry.html", _scores_context(request, access, entry)
    )


def _team(request, team_id: int):
    team = team_of_member(team_id, request.user)
    if team is None:
        raise NotFound("No such team.")
    return team


def _on_teams_page(request, change, done: str):
    try:
        change()
    except scores.ScoreError as exc:  # a message on the teams page
        messages.error(request, str(exc))
    else:
        messages.success(request, done)
    return redirect("sessions_app:teams")


@piweb_view(methods=("POST",))
def add_config(request, team_id):
    team = _team(request, team_id)
    params = form(request)
    name = params.stripped("name", limit=scores.MAX_NAME)
    return _on_teams_page(
        request,
        lambda: scores.create_config(
            team,
            actor=request.user,
            name=name,
            kind=params.text("kind", limit=20),
            min_value=params.text("min", "", limit=30),
            max_value=params.text("max", "", limit=30),
            categories=params.text("categories", "", limit=2000),
            description=params.text("description", "", limit=scores.MAX_DESCRIPTION + 1),
        ),
        f"Added the score {name} to {team.name}.",
    )


@piweb_view(methods=("POST",))
def edit_config(request, team_id, config_id):
    team = _team(request, team_id)
    params = form(request)
    name = params.stripped("name", limit=scores.MAX_NAME)
    return _on_teams_page(
        request,
        lambda: scores.update_config(
            team,
            config_id,
            actor=request.user,
            name=name,
            min_value=params.text("min", "", limit=30),
            max_value=params.text("max", "", limit=30),
            categories=params.text("categories", "", limit=2000),
            description=params.text("description", "", limit=scores.MAX_DESCRIPTION + 1),
        ),
        f"Saved the score {name} of {team.name}.",
    )


@piweb_view(methods=("POST",))
def delete_config(request, team_id, config_id):
    team = _team(request, team_id)
    return _on_teams_page(
        request,
        lambda: scores.delete_config(team, config_id, actor=request.user),
        f"Deleted a score of {team.name}.",
    )
