"""The one permission check used by every view, API, websocket and export.

Roles, weakest first: viewer (read, comment, export), reviewer (also score answers:
a team member with the team role reviewer or higher, whatever the share's role), editor (also chat, navigate,
fork, compact, label), owner (also share, rename, delete). A share link grants viewer
rights on one session without login. Someone with no role at all gets a `NotFound` (404),
so session ids never leak; someone with too weak a role a `Forbidden` (403): both are
`ServiceError`s, answered by the view gate like every other refusal.
"""

from dataclasses import dataclass

from django.utils import timezone

from sessions_app.core.errors import Forbidden, NotFound
from sessions_app.models import Session, SessionShare, ShareLink

VIEWER, REVIEWER, EDITOR, OWNER = "viewer", "reviewer", "editor", "owner"
_RANK = {VIEWER: 1, REVIEWER: 2, EDITOR: 3, OWNER: 4}


@dataclass(frozen=True)
class Access:
    session: Session
    role: str
    share_link: ShareLink | None = None

    @property
    def can_edit(self) -> bool:
        return _RANK[self.role] >= _RANK[EDITOR]

    @property
    def can_score(self) -> bool:
        return _RANK[self.role] >= _RANK[REVIEWER]

    @property
    def is_owner(self) -> bool:
        return self.role == OWNER

    @property
    def can_comment(self) -> bool:
        """Members (viewer and up) comment; a share-link visitor only reads and exports."""
        return self.share_link is None

    @property
    def via_link(self) -> bool:
        return self.share_link is not None


def role_for(user, session: Session) -> str | None:
    if not user.is_authenticated:
        return None
    if session.owner_id == user.pk:
        return OWNER
    roles = {
        _member_role(share_role, member_role)
        for share_role, member_role in SessionShare.objects.filter(
            session=session, team__teammembership__user=user
        ).values_list("role", "team__teammembership__role")
    }
    return max(roles, key=_RANK.__getitem__, default=None)


def _member_role(share_role: str, member_role: str) -> str:
    """A team member's role on a session shared with the team: a team viewer reads and a
    team reviewer scores whatever the share says; editors and admins get the share's role,
    and score even on a viewer share."""
    if member_role in (VIEWER, REVIEWER):
        return member_role
    return EDITOR if share_role == SessionShare.Role.EDITOR else REVIEWER


def active_share_link(token: str | None, session: Session) -> ShareLink | None:
    if not token:
        return None
    link = ShareLink.objects.filter(token=token, session=session, revoked_at=None).first()
    if link is None or (link.expires_at and link.expires_at <= timezone.now()):
        return None
    return link


def share_link_session_id(token: str | None) -> str | None:
    """The session pi_id a share token points at (whether or not it is still active), or None.

    Only a lookup: the rights come from `check_access(..., share_token=token)`.
    """
    if not token:
        return None
    return ShareLink.objects.filter(token=token).values_list("session__pi_id", flat=True).first()


def check_access(
    user, session_pi_id: str, need: str = VIEWER, share_token: str | None = None
) -> Access:
    """Return the caller's Access to the session or raise NotFound / Forbidden."""
    session = Session.objects.filter(pi_id=session_pi_id).first()
    if session is None:
        raise NotFound("No such session.")
    role = role_for(user, session)
    link = None
    if role is None:
        link = active_share_link(share_token, session)
        if link is None:
            raise NotFound("No such session.")
        role = VIEWER
    if _RANK[role] < _RANK[need]:
        raise Forbidden(f"This needs {need} rights on the session; you are a {role}.")
    return Access(session=session, role=role, share_link=link)
