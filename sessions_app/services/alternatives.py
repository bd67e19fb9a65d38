"""Alternatives (issue 36): the workspace copy each variant of a step runs in.

So far this module makes the copies; starting the variants, the check command and the
comparison are still to come (docs/alternatives.md).

A variant's folder is a new folder in its user's area (``alternatives/<session>-<node>-
v<n>``), so the quota counts it like any workspace of theirs. It holds the files as the
node left them: the node's snapshot (the newest on its path, ``selectors.changes.
state_at``) checked out from the session's shadow repository into the new folder, by
``git read-tree -u`` in the sandbox on a scratch index (the repository is mounted
read-only: its own index and work tree are not touched). A node with no snapshot (an
imported session, snapshots off) gets a copy of the session's current folder instead,
made by ``cp -a`` in the sandbox with that folder mounted read-only; the result says
which (`source`), so that the comparison can say so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from sessions_app.agent.sandbox import Bind, SandboxUnavailable, launch_in, run_in
from sessions_app.agent.snapshots import ShadowRepo, SnapshotError
from sessions_app.core.errors import ServiceError
from sessions_app.models import Session
from sessions_app.selectors import changes as changes_selectors
from sessions_app.selectors import workspaces
from sessions_app.services import resources, sandboxing
from sessions_app.services.workspaces import protect_user_area, user_workspace

FOLDER = "alternatives"
COPY_TIMEOUT = 300


class AlternativeError(ServiceError):
    """A variant workspace that cannot be made, with the message to show."""

    code = "alternatives"


@dataclass(frozen=True)
class VariantWorkspace:
    path: str
    source: str  # "snapshot" (the node's files) | "copy" (the current folder's)
    commit: str = ""  # the snapshot checked out


def variant_folder(user, session: Session, at_pi_id: str, index: int) -> str:
    """Where variant `index` of the step at `at_pi_id` works (not made yet)."""
    area = os.fspath(user_workspace(user))
    return os.path.join(area, FOLDER, f"{session.pi_id[:8]}-{at_pi_id[:16]}-v{index}")


def make_variant_workspace(session: Session, user, at_pi_id: str, index: int) -> VariantWorkspace:
    """A new folder holding the files as the node `at_pi_id` left them (see the module
    docstring). Raises AlternativeError."""
    if problem := resources.reserve_problem() or resources.quota_problem(user.pk):
        raise AlternativeError(f"No workspace copy can be made now. {problem}", 507)
    folder = variant_folder(user, session, at_pi_id, index)
    if os.path.lexists(folder):
        raise AlternativeError(f"{folder} exists already.", 409)
    os.makedirs(os.path.dirname(folder), mode=0o755, exist_ok=True)
    os.mkdir(folder, 0o755)
    try:
        snapshot = changes_selectors.state_at(session, at_pi_id)
        repo = changes_selectors.repo_for(session) if snapshot is not None else None
        if snapshot is not None and repo is not None and repo.has(snapshot.commit):
            _check_out(repo, snapshot.commit, folder)
            made = VariantWorkspace(folder, "snapshot", snapshot.commit)
        else:
            _copy_current(session, user, folder)
            made = VariantWorkspace(folder, "copy")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    workspaces.check_session_cwd(folder, user.pk)
    return made


def remove_variant_workspace(user, path: str) -> bool:
    """Delete a variant's folder (its branch was archived or deleted); only a folder
    under the user's ``alternatives`` folder. True when one was removed."""
    root = os.path.join(os.fspath(user_workspace(user)), FOLDER)
    real = os.path.realpath(path)
    if os.path.dirname(real) != os.path.realpath(root) or not os.path.isdir(real):
        return False
    shutil.rmtree(real)
    return True


def _check_out(source: ShadowRepo, commit: str, folder: str) -> None:
    sandboxing.make_var_reachable()
    try:
        source.export_to(commit, folder)
    except SnapshotError as exc:
        raise AlternativeError(f"The node's files could not be restored: {exc}") from None


def _copy_current(session: Session, user, folder: str) -> None:
    """``cp -a`` of the session's current folder into `folder`, in the sandbox as the
    commands' account with the source read-only."""
    try:
        source = workspaces.session_cwd(session)
    except Exception as exc:  # WorkspaceError: nothing here to copy
        raise AlternativeError(f"This session's folder cannot be copied: {exc}") from None
    config = sandboxing.config()
    protect_user_area(user, sandboxing.make_var_reachable())
    argv = ["cp", "-a", "--", os.path.join(source, "."), folder]
    try:
        if config.enabled:
            binds = [Bind(source, source, writable=False, hand_over=False)]
            binds.append(Bind(folder, folder, True))
            env = {"LANG": "C.UTF-8"}
            done = run_in(launch_in(config, argv, binds, env, folder), timeout=COPY_TIMEOUT)
        else:  # single-user machines only: the copy runs as the server, like every command
            done = subprocess.run(argv, capture_output=True, timeout=COPY_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired, SandboxUnavailable) as exc:
        raise AlternativeError(f"The folder could not be copied: {exc}") from None
    if done.returncode != 0:
        why = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
        raise AlternativeError(f"The folder could not be copied:\n{why[:2000]}")
