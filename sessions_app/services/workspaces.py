"""Per-user workspaces and per-session artifact files: the one place that says where.

- A session's cwd must lie inside ``<workspace root>/<owner pk>/``: one user can never run
  tools in another user's files nor in the root itself. Session creation, chat's send and
  the worker that runs tools all ask ``check_session_cwd``.
- A session's artifact files (full outputs of truncated bash runs) live in
  ``<PIWEB_ARTIFACT_DIR>/sessions/<session pk>/`` (``artifact_dir``); the full-output
  download serves only files inside that directory (``session_artifact_file``).
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from sessions_app.agent.paths import (
    WorkspaceError as WorkspaceError,  # (the views catch it from here)
)
from sessions_app.agent.paths import (
    check_cwd,
    is_within,
    make_private_dir,
    user_areas,
)


def owner_key(owner_or_pk) -> str:
    return str(getattr(owner_or_pk, "pk", owner_or_pk))


def user_workspace(owner, *, create: bool = True) -> Path:
    """The user's folder in the first workspace root (created on demand)."""
    area = Path(user_areas(settings.PIWEB_WORKSPACE_ROOTS[:1], owner_key(owner))[0])
    if create:
        protect_user_area(owner)
    return area


def protect_user_area(owner, traverse_gid: int | None = None) -> None:
    """Every workspace root and the owner's folder in it exist, private to this account
    (``make_private_dir``): no other local account can reach a file a session made (see
    docs/SANDBOX.md, "No setuid files")."""
    roots = settings.PIWEB_WORKSPACE_ROOTS
    for root, area in zip(roots, user_areas(roots, owner_key(owner)), strict=True):
        make_private_dir(root, traverse_gid)
        make_private_dir(area, traverse_gid)


def check_session_cwd(cwd: str, owner, *, create: bool = False) -> str:
    """Real path of ``cwd`` if it lies in the owner's workspace area, else WorkspaceError."""
    return check_cwd(cwd, settings.PIWEB_WORKSPACE_ROOTS, owner_key=owner_key(owner), create=create)


def agent_skills_dir() -> str:
    """The global skills directory: listed in every session's prompt, and the one place
    outside the cwd that the agent's read tool may open."""
    return os.path.join(os.fspath(settings.PIWEB_AGENT_DIR), "skills")


def artifact_dir(session) -> str:
    """This session's own artifact directory (by pk: never derived from imported ids)."""
    return os.path.join(os.fspath(settings.PIWEB_ARTIFACT_DIR), "sessions", str(session.pk))


def session_artifact_file(session, raw: str | None) -> Path | None:
    """The real path of ``raw`` if it is a file inside this session's artifact directory."""
    if not raw or not isinstance(raw, str) or "\x00" in raw or not os.path.isabs(raw):
        return None
    root = os.path.realpath(artifact_dir(session))
    real = os.path.realpath(raw)
    if real == root or not is_within(real, root) or not os.path.isfile(real):
        return None
    return Path(real)
