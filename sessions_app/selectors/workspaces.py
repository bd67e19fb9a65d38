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

These are reads; `services/workspaces.py` makes the folders.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.utils import timezone
from django.utils.text import slugify

from sessions_app.agent import safefs
from sessions_app.agent.paths import (
    PATH_MAX,
    WorkspaceError,
    check_cwd,
    is_within,
    user_areas,
)
from sessions_app.agent.sandbox import SandboxConfig
from sessions_app.core.input_limits import MAX_CWD_CHARS
from sessions_app.models import Entry, WorkspaceUsage
from sessions_app.selectors import paths

_UNSET = paths.UNSET


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


def user_area(owner) -> Path:
    """The user's folder in the first workspace root (`services.workspaces.user_workspace`
    makes it)."""
    return user_areas_of(owner)[0]


def check_session_cwd(cwd: str, owner) -> str:
    """Real path of ``cwd`` if it lies in the user's workspace area, else WorkspaceError."""
    return check_cwd(cwd, settings.PIWEB_WORKSPACE_ROOTS, owner_key=area_key(owner))


def area_key(owner) -> str | None:
    """The key of the user's own folder in each root (None on a single-user setup)."""
    return None if single_user() else owner_key(owner)


@dataclass(frozen=True)
class SessionWorkspace:
    """Where a session works at one leaf: the folder, whose area it must be in, and the
    choice entry that set it (None: the header's cwd)."""

    cwd: str
    user_pk: int
    choice_id: str | None = None
    # the tool set a choice on the path names (an alternative's tool-set variant; the
    # nearest that names one), None: the session's own
    tools: tuple[str, ...] | None = None


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
    found: SessionWorkspace | None = None
    for pk in reversed(paths.path_pks(session, leaf_pk)):
        if pk not in pks:
            continue
        choice = chosen[pks[pk]]
        if found is None:
            found = SessionWorkspace(choice["cwd"], int(choice["by"]), pks[pk])
        if choice.get("tools"):
            return replace(found, tools=tuple(choice["tools"]))
    return found or default


def session_cwd(session, leaf_pi_id=_UNSET) -> str:
    """The real working directory of the session at the leaf, checked (WorkspaceError)."""
    where = session_workspace(session, leaf_pi_id)
    return check_session_cwd(where.cwd, where.user_pk)


def session_folder(session, leaf_pi_id=_UNSET) -> str | None:
    """The session's real working directory at the leaf (default: its leaf) when it is a
    folder here; None when it is refused or not there (an imported session whose cwd is
    elsewhere)."""
    try:
        real = session_cwd(session, leaf_pi_id)
    except WorkspaceError:
        return None
    return real if os.path.isdir(real) else None


def agent_dir() -> str:
    """The real path of pi's agent folder (the server's): context files and skills are
    read beneath it."""
    return os.path.realpath(settings.PIWEB_AGENT_DIR)


def sandbox_config() -> SandboxConfig:
    """The sandbox as the settings describe it: every command, and the git of the
    workspaces' shadow repositories, run in it."""
    return SandboxConfig(
        mode=settings.PIWEB_SANDBOX,
        bwrap=settings.PIWEB_SANDBOX_BWRAP,
        network=settings.PIWEB_SANDBOX_NETWORK,
        cpu_seconds=settings.PIWEB_SANDBOX_CPU_SECONDS,
        memory_mb=settings.PIWEB_SANDBOX_MEMORY_MB,
        total_memory_mb=settings.PIWEB_SANDBOX_TOTAL_MEMORY_MB,
        max_processes=settings.PIWEB_SANDBOX_MAX_PROCESSES,
        file_size_mb=settings.PIWEB_SANDBOX_FILE_SIZE_MB,
        tmp_size_mb=settings.PIWEB_SANDBOX_TMP_MB,
        stage_dir=os.path.join(os.fspath(settings.VAR_DIR), "sandbox"),
        host_uid=settings.PIWEB_SANDBOX_HOST_UID,
    )


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


def open_artifact_file(session, raw: str | None) -> tuple[BinaryIO, str] | None:
    """``session_artifact_file`` opened for reading, and its name: opened beneath the
    artifact directory with no link followed, so a name swapped for a link after the
    check fails to open instead of leading out."""
    path = session_artifact_file(session, raw)
    if path is None:
        return None
    root = os.path.realpath(artifact_dir(session))
    try:
        root_fd = safefs.open_root(root)
        try:
            fd = safefs.open_beneath(
                root_fd, os.path.relpath(path, root), os.O_RDONLY | os.O_NONBLOCK, follow=False
            )
        finally:
            os.close(root_fd)
    except OSError:
        return None
    if not safefs.is_regular(fd):
        os.close(fd)
        return None
    return safefs.reader(fd), path.name


# --- what "Continue in…" offers (choosing: `services/workspace_choice.py`) ----------------

MAX_LISTED = 200


@dataclass(frozen=True)
class Options:
    current: str  # the folder in force at the leaf (may be unusable here)
    current_error: str  # why it cannot be used ("" when it can)
    own: str | None  # the session's own folder, when allowed for this user
    existing: list[str]
    area: str  # where new workspaces go
    single_user: bool


def options(session, user) -> Options:
    """What "Continue in…" offers this user at the session's leaf."""
    where = session_workspace(session)
    try:
        check_session_cwd(where.cwd, where.user_pk)
        error = ""
    except WorkspaceError as exc:
        error = str(exc)
    own = None
    for candidate in (where.cwd, session.cwd):
        if candidate and _allowed(candidate, user):
            own = os.path.realpath(candidate)
            break
    return Options(
        current=where.cwd,
        current_error=error,
        own=own,
        existing=existing_workspaces(user),
        area=str(user_area(user)),
        single_user=single_user(),
    )


def _allowed(path: str, user) -> bool:
    """Whether `path` lies in the user's area (it need not exist yet: it is then made)."""
    if not path or not os.path.isabs(path) or "\x00" in path or len(path) > PATH_MAX:
        return False
    real = os.path.realpath(path)
    if os.path.exists(real) and not os.path.isdir(real):
        return False
    return any(is_within(real, os.path.realpath(a)) for a in user_areas_of(user))


def existing_workspaces(user) -> list[str]:
    """The folders directly inside the user's area(s), sorted (at most MAX_LISTED)."""
    found: list[str] = []
    for area in user_areas_of(user):
        try:
            with os.scandir(area) as listing:
                for item in listing:
                    if item.is_dir(follow_symlinks=False) and not item.name.startswith("."):
                        found.append(os.path.join(os.fspath(area), item.name))
        except OSError:
            continue
    return sorted(found)[:MAX_LISTED]


# How long the name of a fresh folder may be (from the session's name).
FRESH_NAME_CHARS = 40


def fresh_folder(user, name: str = "") -> str:
    """A folder not yet used in the user's area for a new session: named after the
    session (`name`, as a slug), else after the time; `-2`, `-3`… when taken. The new
    session form offers it by default, so nobody types an absolute path."""
    base = slugify(name)[:FRESH_NAME_CHARS].strip("-") or timezone.localtime().strftime(
        "session-%Y-%m-%d-%H%M"
    )
    area = user_area(user)
    taken = {os.path.basename(path) for path in existing_workspaces(user)}
    candidate, number = base, 1
    while candidate in taken:
        number += 1
        candidate = f"{base}-{number}"
    return str(area / candidate)


def project_dir(session, user, leaf=_UNSET) -> str | None:
    """The session's working directory at the leaf (real path) when its project files
    (``.pi/prompts``, ``.pi/settings.json``) may be read for `user`: it passes the system
    prompt's check and lies in that user's own area (pi reads a project's files only for
    a project its user trusts)."""
    where = session_workspace(session, leaf)
    if not where.cwd or len(where.cwd) > MAX_CWD_CHARS:
        return None
    try:
        cwd = check_session_cwd(where.cwd, where.user_pk)
    except WorkspaceError:
        return None
    areas = [os.path.realpath(a) for a in user_areas_of(user)]
    return cwd if any(is_within(cwd, area) for area in areas) else None


def measured_usage(user_id: int) -> WorkspaceUsage | None:
    """The last measure of the disk `user_id`'s workspace folders take, or None."""
    return WorkspaceUsage.objects.filter(user_id=user_id).first()
