"""Per-user workspaces and per-session artifact files: the one place that says where.

- ``PIWEB_WORKSPACE_MODE`` says what a user may use: on a multi-user server (the default)
  their own folder ``<workspace root>/<user pk>/`` of each root, never another user's nor
  the root itself; on a single-user setup the roots themselves (the home folder, say).
- A session's working directory at a leaf (``session_cwd``) is the folder of the last
  workspace choice on the path root→leaf (a pi ``custom`` entry of type
  ``piweb.workspace``, which pi ignores; ``services/workspace_choice.py`` writes them),
  else the header's cwd. The choice is checked against the area of the user who made it
  (the header's cwd against the owner's): a team editor may choose only among their own
  folders, and sharing a session as editor lets editors work in the folder it runs in.
  Session creation, chat's send, the prompt and the worker that runs tools all ask here.
- A session's artifact files (full outputs of truncated bash runs) live in
  ``<PIWEB_ARTIFACT_DIR>/sessions/<session pk>/`` (``artifact_dir``); the full-output
  download serves only files inside that directory (``session_artifact_file``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
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
from sessions_app.models import Entry
from sessions_app.selectors import paths
from sessions_app.services import sessions

_UNSET = sessions.UNSET


CHOICE_TYPE = "piweb.workspace"  # the customType of a workspace choice entry


def owner_key(owner_or_pk) -> str:
    return str(getattr(owner_or_pk, "pk", owner_or_pk))


def single_user() -> bool:
    return settings.PIWEB_WORKSPACE_MODE == "single-user"


def user_areas_of(owner) -> list[Path]:
    """The folders this user's workspaces may be in: the roots themselves on a
    single-user setup, else the user's own folder of each root."""
    if single_user():
        return [Path(os.path.realpath(r)) for r in settings.PIWEB_WORKSPACE_ROOTS]
    return [Path(a) for a in user_areas(settings.PIWEB_WORKSPACE_ROOTS, owner_key(owner))]


def user_workspace(owner, *, create: bool = True) -> Path:
    """The user's folder in the first workspace root (created on demand)."""
    area = user_areas_of(owner)[0]
    if create:
        protect_user_area(owner)
    return area


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


def check_session_cwd(cwd: str, owner, *, create: bool = False) -> str:
    """Real path of ``cwd`` if it lies in the user's workspace area, else WorkspaceError."""
    key = None if single_user() else owner_key(owner)
    return check_cwd(cwd, settings.PIWEB_WORKSPACE_ROOTS, owner_key=key, create=create)


@dataclass(frozen=True)
class SessionWorkspace:
    """Where a session works at one leaf: the folder, whose area it must be in, and the
    choice entry that set it (None: the header's cwd)."""

    cwd: str
    user_pk: int
    choice_id: str | None = None


def session_workspace(session, leaf_pi_id=_UNSET) -> SessionWorkspace:
    """The session's working directory at `leaf_pi_id` (default: its leaf), unchecked.
    Sessions without a choice cost nothing; with choices, one path query."""
    chosen = (session.settings or {}).get("workspaces") or {}
    default = SessionWorkspace(session.cwd or "", session.owner_id)
    if not chosen:
        return default
    if leaf_pi_id is _UNSET:
        leaf_pk = session.leaf_id
    elif leaf_pi_id is None:
        leaf_pk = None
    else:
        leaf_pk = (
            Entry.objects.filter(session=session, pi_id=leaf_pi_id)
            .values_list("pk", flat=True)
            .first()
        )
    if leaf_pk is None:
        return default
    pks = dict(
        Entry.objects.filter(session=session, pi_id__in=list(chosen)).values_list("pk", "pi_id")
    )
    for pk in reversed(paths.path_pks(session, leaf_pk)):
        if pk in pks:
            choice = chosen[pks[pk]]
            return SessionWorkspace(choice["cwd"], int(choice["by"]), pks[pk])
    return default


def session_cwd(session, leaf_pi_id=_UNSET, *, create: bool = False) -> str:
    """The real working directory of the session at the leaf, checked (WorkspaceError)."""
    where = session_workspace(session, leaf_pi_id)
    return check_session_cwd(where.cwd, where.user_pk, create=create)


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
