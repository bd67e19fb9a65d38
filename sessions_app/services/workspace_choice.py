"""Continue a session in a workspace you choose ("Continue in…").

For any session a user may edit, the choices are (`selectors.workspaces.options`):

1. its own working directory (the header's cwd, or the one in force at the leaf), when
   the server allows that path for this user (`workspaces.check_session_cwd`: on a
   single-user setup anywhere under the roots, else under the user's own folder);
2. one of the user's existing workspaces (the folders directly in their area);
3. a new workspace in their area: empty, unpacked from an uploaded .tar.gz or .zip
   (`agent.archives`: size-capped, nothing hostile), or cloned from a git repository on
   the server's disk in the user's area with ``git clone --no-hardlinks``, run in the
   sandbox with only that area (read-only) and the new folder mounted.

`choose` records the choice as a pi ``custom`` entry at the leaf (customType
``piweb.workspace``, which pi ignores) and in ``Session.settings["workspaces"]`` by that
entry's id; from then on, below that entry, the prompt, the tools and the sandbox use the
folder (`workspaces.session_workspace`). A fork copies the choices on its path.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

from django.conf import settings
from django.db import transaction

from sessions_app.agent import archives, safefs
from sessions_app.agent.paths import WorkspaceError, is_within
from sessions_app.agent.sandbox import Bind, SandboxUnavailable, launch_in, run_in
from sessions_app.core.errors import ServiceError
from sessions_app.models import Session
from sessions_app.selectors import workspaces
from sessions_app.services import resources, sandboxing, sessions
from sessions_app.services.workspaces import make_session_cwd, protect_user_area, user_workspace

KINDS = ("own", "existing", "empty", "archive", "git")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
GIT_TIMEOUT = 300
_TRUST_AND_RUN = "printf '[safe]\\n\\tdirectory = *\\n' > /tmp/gitconfig && exec \"$@\""


class ChoiceError(ServiceError):
    """A workspace choice that is refused, with the message to show."""

    code = "workspace"


def _new_folder(user, name: str) -> str:
    name = (name or "").strip()
    if not NAME_RE.match(name):
        raise ChoiceError(
            "Name the new workspace with letters, digits, '.', '_' or '-' "
            "(up to 100 characters, not starting with a dot)."
        )
    area = os.fspath(user_workspace(user))
    try:
        return safefs.mkdir_beneath(area, name)
    except FileExistsError:
        raise ChoiceError(
            f"{os.path.join(area, name)} exists already: choose it among your workspaces, "
            "or another name."
        ) from None


def prepare(
    session: Session,
    user,
    kind: str,
    *,
    path: str = "",
    name: str = "",
    upload=None,
    git_source: str = "",
) -> str:
    """Make (or check) the folder of a choice; its real path. Raises ChoiceError."""
    if kind not in KINDS:
        raise ChoiceError(f"Unknown kind of workspace: {kind!r}.")
    if kind == "own":
        found = workspaces.options(session, user).own
        if found is None:
            raise ChoiceError(
                f"This session's folder ({session.cwd or 'none'}) is not one this server lets "
                "you use: choose one of your workspaces or a new one."
            )
        return _checked(found, user, create=True)
    if kind == "existing":  # any folder of the user's area (the list shows the top ones)
        if not (path or "").strip():
            raise ChoiceError("Choose one of your workspaces.")
        return _checked(path, user)
    folder = _new_folder(user, name)
    try:
        if kind == "archive":
            _unpack_upload(upload, folder, user)
        elif kind == "git":
            _clone(git_source, folder, user)
    except BaseException:
        try:  # (the folder is new: its name is the one just checked)
            safefs.remove_beneath(os.fspath(user_workspace(user)), os.path.basename(folder))
        except OSError:
            pass
        raise
    return _checked(folder, user)


def _checked(path: str, user, *, create: bool = False) -> str:
    try:
        if create:
            return make_session_cwd(path, user)
        return workspaces.check_session_cwd(path, user)
    except WorkspaceError as exc:
        raise ChoiceError(str(exc)) from None


def _unpack_upload(upload, folder: str, user) -> None:
    if upload is None:
        raise ChoiceError("Choose a .tar.gz or .zip file to unpack.")
    limit = settings.PIWEB_WORKSPACE_ARCHIVE_MAX_MB << 20
    if upload.size > limit:
        raise ChoiceError(
            f"The archive is {upload.size:,} bytes; at most {limit:,} may be uploaded "
            "(PIWEB_WORKSPACE_ARCHIVE_MAX_MB)."
        )
    allowed, why = resources.unpack_allowance(user.pk, folder)
    with tempfile.NamedTemporaryFile(dir=settings.VAR_DIR, suffix=".upload") as temp:
        for chunk in upload.chunks():
            temp.write(chunk)
        temp.flush()
        try:
            archives.unpack(
                temp.name,
                folder,
                max_bytes=allowed,
                max_files=settings.PIWEB_WORKSPACE_ARCHIVE_MAX_FILES,
            )
        except archives.ArchiveError as exc:
            raise ChoiceError(f"The archive was refused: {exc}. The limit is {why}.") from None
    if resources.quota_bytes():
        resources.request_measure(user.pk, force=True)  # commands see the new figure


def _clone(source: str, folder: str, user) -> None:
    """`git clone --no-hardlinks` of a repository in the user's area, run in the sandbox
    as the commands' account with only that area (read-only) and the new folder mounted:
    a ``gitdir:`` file, a ``commondir`` or an alternates file of the source can lead git
    only to what that user's own commands can read."""
    source = (source or "").strip()
    if not source or not os.path.isabs(source):
        raise ChoiceError("Give the absolute path of a git repository on the server.")
    named = os.path.normpath(source)  # checked as written: links resolve in the sandbox
    area = next(
        (os.fspath(a) for a in workspaces.user_areas_of(user) if is_within(named, os.fspath(a))),
        None,
    )
    if area is None:
        raise ChoiceError(
            f"{source} is outside your workspaces: only repositories there can be cloned."
        )
    if problem := resources.reserve_problem() or resources.quota_problem(user.pk):
        raise ChoiceError(f"Nothing can be cloned now. {problem}", 507)
    config = sandboxing.config()
    protect_user_area(user, sandboxing.make_var_reachable())
    clone = [
        "git", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never",
        "-c", "protocol.file.allow=always",
        "clone", "--no-hardlinks", "--quiet", "--", named, folder,
    ]  # fmt: skip
    # Whoever made the source (the sandbox, the worker, an upload), it is the user's: the
    # "dubious ownership" check is off, in a global configuration of the sandbox's own
    # (git-upload-pack, which reads the source, drops -c options).
    argv = ["/bin/sh", "-c", _TRUST_AND_RUN, "sh", *clone]
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/tmp/gitconfig"}
    env |= {"GIT_TERMINAL_PROMPT": "0", "LANG": "C.UTF-8"}
    binds = [Bind(area, area, writable=False, hand_over=False), Bind(folder, folder, True)]
    try:
        if config.enabled:
            done = run_in(launch_in(config, argv, binds, env, folder), timeout=GIT_TIMEOUT)
        else:  # single-user machines only: git runs as the server, like every command
            env |= {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": folder}
            env["GIT_CONFIG_GLOBAL"] = "/dev/null"
            done = subprocess.run(clone, capture_output=True, timeout=GIT_TIMEOUT, env=env)
    except (OSError, subprocess.TimeoutExpired, SandboxUnavailable) as exc:
        raise ChoiceError(f"git clone failed: {exc}") from None
    if done.returncode != 0:
        why = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
        raise ChoiceError(f"git clone failed:\n{why[:4000] or done.returncode}")


def choose(session: Session, user, cwd: str, kind: str, *, source: str = ""):
    """Continue at the leaf in `cwd` (a real path `prepare` gave): the choice entry."""
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        data = {"cwd": cwd, "kind": kind, "by": user.pk}
        if source:
            data["source"] = source
        entry = sessions.append_entry(
            locked,
            {"type": "custom", "customType": workspaces.CHOICE_TYPE, "data": data},
            actor=user,
        )
        locked.refresh_from_db()
        chosen = dict((locked.settings or {}).get("workspaces") or {})
        chosen[entry.pi_id] = {"cwd": cwd, "by": user.pk}
        locked.settings = {**(locked.settings or {}), "workspaces": chosen}
        locked.save(update_fields=["settings"])
        sessions.record_activity(locked, user, "workspace_chosen", cwd=cwd, kind=kind)
    session.refresh_from_db()
    return entry


def continue_in(session: Session, user, kind: str, **how) -> str:
    """Prepare the folder and record the choice; its real path (ChoiceError)."""
    folder = prepare(session, user, kind, **how)
    source = how.get("git_source", "") if kind == "git" else ""
    if kind == "archive" and how.get("upload") is not None:
        source = getattr(how["upload"], "name", "")
    choose(session, user, folder, kind, source=source)
    return folder


def copy_choices(source: Session, target: Session, entry_ids, *, only_by: int) -> None:
    """A fork keeps the workspace choices of the entries it copied that its owner made
    (another user's folder is theirs: the fork's owner chooses their own)."""
    chosen = (source.settings or {}).get("workspaces") or {}
    kept = {
        eid: chosen[eid]
        for eid in entry_ids
        if eid in chosen and int(chosen[eid].get("by", -1)) == only_by
    }
    if kept:
        Session.objects.filter(pk=target.pk).update(
            settings={**(target.settings or {}), "workspaces": kept}
        )
