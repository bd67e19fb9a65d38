"""Teams in the app (services/teams.py): create, invite by username, set roles, remove,
leave. Plain POST forms back to the teams page; errors come back as messages."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect

from sessions_app.models import Team
from sessions_app.params import form
from sessions_app.responses import piweb_view
from sessions_app.selectors.teams import team_of_member
from sessions_app.services import teams


def _team(request, team_id: int) -> Team:
    """A team the user is in (others are not shown to them at all)."""
    team = team_of_member(team_id, request.user)
    if team is None:
        raise Http404("No such team.")
    return team


def _run(request, change, done: str):
    try:
        change()
    except teams.TeamError as exc:  # a message on the teams page
        messages.error(request, str(exc))
    else:
        messages.success(request, done)
    return redirect("sessions_app:teams")


@piweb_view(methods=("POST",))
def create(request):
    name = form(request).text("name")
    return _run(
        request,
        lambda: teams.create_team(name, actor=request.user),
        f"Created the team {name.strip()[:200]}.",
    )


@piweb_view(methods=("POST",))
def invite(request, team_id):
    team = _team(request, team_id)
    params = form(request)
    username = params.stripped("username", limit=150)
    role = params.text("role", "editor")
    return _run(
        request,
        lambda: teams.invite(team, username, role, actor=request.user),
        f"Added {username} to {team.name} as {role}.",
    )


@piweb_view(methods=("POST",))
def set_role(request, team_id, member_id):
    team = _team(request, team_id)
    role = form(request).text("role")
    return _run(
        request,
        lambda: teams.set_role(team, member_id, role, actor=request.user),
        f"Changed a role in {team.name}.",
    )


@piweb_view(methods=("POST",))
def remove(request, team_id, member_id):
    team = _team(request, team_id)
    return _run(
        request,
        lambda: teams.remove_member(team, member_id, actor=request.user),
        f"Removed a member from {team.name}.",
    )


@piweb_view(methods=("POST",))
def leave(request, team_id):
    team = _team(request, team_id)
    name = team.name
    return _run(request, lambda: teams.leave(team, actor=request.user), f"You left {name}.")
