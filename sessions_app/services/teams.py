"""Teams in the app, without the admin site: anyone creates a team (and is its admin);
its admins invite members by username, set their roles (viewer, editor, admin) and remove
them; any member leaves. The sessions lists of the people concerned are told by the
membership receivers in services/sharing.py."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from sessions_app.core.errors import ServiceError
from sessions_app.core.text import clean_text
from sessions_app.models import Team, TeamMembership
from sessions_app.selectors.teams import (
    admins_besides,
    has_other_members,
    membership,
    shared_session_pks,
    team_member,
    team_name_taken,
)
from sessions_app.selectors.users import user_named
from sessions_app.services.sharing import publish_access_changed

ROLES = TeamMembership.Role.values
MAX_TEAM_NAME = 200


class TeamError(ServiceError):
    """A team change that cannot be made (the message is shown to the user)."""

    code = "team"


def _require_admin(team: Team, actor) -> None:
    member = membership(team, actor)
    if member is None or member.role != TeamMembership.Role.ADMIN:
        raise TeamError(f"Only an admin of {team.name} can change its members.")


def _role(role: str) -> str:
    if role not in ROLES:
        raise TeamError(f"A team role is one of {', '.join(ROLES)}.")
    return role


@transaction.atomic
def create_team(name: str, *, actor) -> Team:
    name = clean_text(name or "").strip()[:MAX_TEAM_NAME]
    if not name:
        raise TeamError("Give the team a name.")
    if team_name_taken(name):
        raise TeamError(f"There is already a team called {name}.")
    try:
        with transaction.atomic():
            team = Team.objects.create(name=name)
    except IntegrityError as exc:
        raise TeamError(f"There is already a team called {name}.") from exc
    TeamMembership.objects.create(team=team, user=actor, role=TeamMembership.Role.ADMIN)
    return team


@transaction.atomic
def invite(team: Team, username: str, role: str, *, actor) -> TeamMembership:
    _require_admin(team, actor)
    role = _role(role)
    user = user_named((username or "").strip())
    if user is None or not user.is_active:
        raise TeamError(f"No user called {(username or '').strip()[:150]!r}.")
    if membership(team, user) is not None:
        raise TeamError(f"{user.get_username()} is already in {team.name}.")
    return TeamMembership.objects.create(team=team, user=user, role=role)


@transaction.atomic
def set_role(team: Team, member_pk: int, role: str, *, actor) -> TeamMembership:
    _require_admin(team, actor)
    role = _role(role)
    member = TeamMembership.objects.select_for_update().filter(team=team, pk=member_pk).first()
    if member is None:
        raise TeamError("No such member.")
    if role != TeamMembership.Role.ADMIN and not admins_besides(team, member.user_id):
        raise TeamError("A team keeps at least one admin: make someone else admin first.")
    member.role = role
    member.save(update_fields=["role"])
    # Open pages of the team's sessions check the member's rights again.
    for session_pk in shared_session_pks(team.pk):
        publish_access_changed(session_pk, "team role changed")
    return member


@transaction.atomic
def remove_member(team: Team, member_pk: int, *, actor) -> None:
    _require_admin(team, actor)
    member = team_member(team, member_pk)
    if member is None:
        raise TeamError("No such member.")
    if member.user_id == actor.pk:
        return leave(team, actor=actor)
    member.delete()


@transaction.atomic
def leave(team: Team, *, actor) -> None:
    """Leave the team. The last member leaving deletes it (its shares go with it); the
    last admin cannot leave others without an admin."""
    member = membership(team, actor)
    if member is None:
        raise TeamError(f"You are not in {team.name}.")
    if not has_other_members(team, member):
        team.delete()
        return
    if member.role == TeamMembership.Role.ADMIN and not admins_besides(team, actor.pk):
        raise TeamError("You are its last admin: make someone else admin before you leave.")
    member.delete()
