"""Making the folders `selectors/workspaces.py` says a user and a session work in."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from sessions_app.agent.paths import check_cwd, make_private_dir
from sessions_app.selectors.workspaces import area_key, single_user, user_area, user_areas_of


def user_workspace(owner) -> Path:
    """The user's folder in the first workspace root, made (private) if missing."""
    protect_user_area(owner)
    return user_area(owner)


def protect_user_area(owner, traverse_gid: int | None = None) -> None:
    """Every workspace root and the owner's folder in it exist, private to this account
    (``make_private_dir``): no other local account can reach a file a session made (see
    docs/SANDBOX.md, "No setuid files")."""
    if single_user():
        return  # the roots are the user's own folders (a home folder, say): left as they are
    roots = settings.PIWEB_WORKSPACE_ROOTS
    for root, area in zip(roots, user_areas_of(owner), strict=True):
        make_private_dir(root, traverse_gid)
        make_private_dir(area, traverse_gid)


def make_session_cwd(cwd: str, owner) -> str:
    """Like `selectors.workspaces.check_session_cwd`, making the folder if it is missing."""
    return check_cwd(cwd, settings.PIWEB_WORKSPACE_ROOTS, owner_key=area_key(owner), create=True)
