"""selectors/access.py: who may read or change a session (the owner, team shares with their
roles, a live share link) and the refusals everyone else gets."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from sessions_app.core.errors import Forbidden, NotFound
from sessions_app.models import SessionShare, ShareLink, Team, TeamMembership
from sessions_app.selectors.access import (
    EDITOR,
    OWNER,
    REVIEWER,
    VIEWER,
    check_access,
    role_for,
    share_link_session_id,
)
from sessions_app.selectors.sessions import visible_sessions
from sessions_app.services import sessions

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


def shared_with(session, user, share_role, member_role=TeamMembership.Role.EDITOR):
    team = Team.objects.create(name=f"team of {user.username} ({share_role})")
    TeamMembership.objects.create(team=team, user=user, role=member_role)
    SessionShare.objects.create(session=session, team=team, role=share_role)


def test_roles_come_from_ownership_and_team_shares(make_user):
    owner, editor, viewer, demoted, reviewer, stranger = (make_user() for _ in range(6))
    session = sessions.create_session(owner=owner, cwd="/w")
    shared_with(session, editor, SessionShare.Role.EDITOR)
    # A team editor on a viewer share reads and scores (a reviewer's rights).
    shared_with(session, viewer, SessionShare.Role.VIEWER)
    # A member whose team role is viewer only reads, even on an editor share.
    shared_with(session, demoted, SessionShare.Role.EDITOR, TeamMembership.Role.VIEWER)
    # A team reviewer scores, and only reads, whatever the share says.
    shared_with(session, reviewer, SessionShare.Role.EDITOR, TeamMembership.Role.REVIEWER)
    assert role_for(owner, session) == OWNER
    assert role_for(editor, session) == EDITOR
    assert role_for(viewer, session) == REVIEWER
    assert role_for(demoted, session) == VIEWER
    assert role_for(reviewer, session) == REVIEWER
    assert check_access(reviewer, session.pi_id, REVIEWER).can_score
    assert not check_access(demoted, session.pi_id).can_score
    with pytest.raises(Forbidden):
        check_access(demoted, session.pi_id, REVIEWER)
    assert role_for(stranger, session) is None
    assert role_for(AnonymousUser(), session) is None
    # The best of several shares counts.
    shared_with(session, viewer, SessionShare.Role.EDITOR)
    assert role_for(viewer, session) == EDITOR


def test_visible_sessions_are_owned_or_shared(make_user):
    me, other = make_user(), make_user()
    mine = sessions.create_session(owner=me, cwd="/w")
    theirs = sessions.create_session(owner=other, cwd="/w")
    sessions.create_session(owner=other, cwd="/w")
    shared_with(theirs, me, SessionShare.Role.VIEWER)
    assert set(visible_sessions(me)) == {mine, theirs}
    assert not visible_sessions(AnonymousUser()).exists()


def test_check_access_refuses_strangers_as_not_found_and_viewers_with_the_reason(make_user):
    owner, viewer, stranger = make_user(), make_user(), make_user()
    session = sessions.create_session(owner=owner, cwd="/w")
    shared_with(session, viewer, SessionShare.Role.VIEWER, TeamMembership.Role.VIEWER)
    granted = check_access(owner, session.pi_id, OWNER)
    assert granted.is_owner and granted.can_edit and granted.can_comment
    seen = check_access(viewer, session.pi_id)
    assert seen.role == VIEWER and not seen.can_edit and seen.can_comment
    with pytest.raises(Forbidden, match="needs editor rights on the session; you are a"):
        check_access(viewer, session.pi_id, EDITOR)
    with pytest.raises(NotFound):
        check_access(stranger, session.pi_id)
    with pytest.raises(NotFound):
        check_access(owner, "no-such-session")


def test_a_live_link_lets_anyone_read_and_nothing_more(make_user):
    owner, visitor = make_user(), make_user()
    session = sessions.create_session(owner=owner, cwd="/w")
    link = ShareLink.objects.create(token="t-live", session=session, created_by=owner)
    access = check_access(AnonymousUser(), session.pi_id, share_token="t-live")
    assert access.role == VIEWER and access.via_link and not access.can_comment
    assert access.share_link == link
    with pytest.raises(Forbidden):
        check_access(visitor, session.pi_id, EDITOR, share_token="t-live")
    assert share_link_session_id("t-live") == session.pi_id
    assert share_link_session_id("") is None and share_link_session_id("nope") is None

    ShareLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(NotFound):
        check_access(visitor, session.pi_id, share_token="t-live")
    ShareLink.objects.filter(pk=link.pk).update(expires_at=None, revoked_at=timezone.now())
    with pytest.raises(NotFound):
        check_access(visitor, session.pi_id, share_token="t-live")
    # A revoked link still says which session it was for (the page explains the refusal).
    assert share_link_session_id("t-live") == session.pi_id
    ShareLink.objects.filter(pk=link.pk).update(revoked_at=None)
    other = sessions.create_session(owner=owner, cwd="/w")
    with pytest.raises(NotFound):  # a token opens only its own session
        check_access(visitor, other.pi_id, share_token="t-live")
    assert check_access(visitor, session.pi_id, share_token="t-live").via_link
