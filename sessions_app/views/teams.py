"""Teams in the app (services/teams.py): create, invite by username, set roles, remove,
leave. Plain POST forms back to the teams page; errors come back as messages."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from sessions_app.models import Team
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
    except teams.TeamError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, done)
    return redirect("sessions_app:teams")


@login_required
@require_POST
def create(request):
    name = request.POST.get("name", "")
    return _run(
        request,
        lambda: teams.create_team(name, actor=request.user),
        f"Created the team {name.strip()[:200]}.",
    )


@login_required
@require_POST
def invite(request, team_id):
    team = _team(request, team_id)
    username = request.POST.get("username", "").strip()[:150]
    role = request.POST.get("role", "editor")
    return _run(
        request,
        lambda: teams.invite(team, username, role, actor=request.user),
        f"Added {username} to {team.name} as {role}.",
    )


@login_required
@require_POST
def set_role(request, team_id, member_id):
    team = _team(request, team_id)
    role = request.POST.get("role", "")
    return _run(
        request,
        lambda: teams.set_role(team, member_id, role, actor=request.user),
        f"Changed a role in {team.name}.",
    )


@login_required
@require_POST
def remove(request, team_id, member_id):
    team = _team(request, team_id)
    return _run(
        request,
        lambda: teams.remove_member(team, member_id, actor=request.user),
        f"Removed a member from {team.name}.",
    )


@login_required
@require_POST
def leave(request, team_id):
    team = _team(request, team_id)
    name = team.name
    return _run(request, lambda: teams.leave(team, actor=request.user), f"You left {name}.")
