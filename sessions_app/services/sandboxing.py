"""The one way a session runs anything: its sandbox, its tools, its commands.

Every process started for a session goes through here, with the same sandbox, limits,
working directory and environment: the agent's tools (:func:`tool_context`), the user's
``!cmd``/``!!cmd`` (:func:`run_command`) and the admin commands ``run_in_workspace`` and
``run_tool``, which call the same two functions.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from django.conf import settings

from sessions_app.agent.paths import Workspace, make_private_dir, output_file_factory
from sessions_app.agent.safefs import chown_tree, open_root
from sessions_app.agent.sandbox import SandboxConfig, SandboxUnavailable, require, status_line
from sessions_app.agent.shell import CommandRefused, ShellOutcome, run_shell
from sessions_app.agent.signals import AbortSignal
from sessions_app.agent.tools import ToolContext
from sessions_app.core.truncate import StreamSnapshot
from sessions_app.models import Session
from sessions_app.selectors import workspaces
from sessions_app.services import resources
from sessions_app.services.sessions import UNSET
from sessions_app.services.workspaces import protect_user_area


def config() -> SandboxConfig:
    """The sandbox as the settings describe it."""
    return workspaces.sandbox_config()


def status() -> str:
    """The startup banner's sandbox line."""
    return status_line(config())


def check_available() -> None:
    """SandboxUnavailable (with how to fix it) when commands cannot run right now."""
    require(config())


def hand_over(path: str) -> None:
    """After the worker itself wrote into a workspace (restored files, unpacked an
    archive, cloned a repository), give what it wrote to the account commands run as,
    so they can change it (nothing to do when commands run as the worker's account)."""
    owner = config().command_owner
    if owner is None:
        return
    fd = open_root(path)
    try:
        chown_tree(fd, *owner)
    finally:
        os.close(fd)


def make_var_reachable() -> int | None:
    """With a root worker, let the commands' account pass through the var folder and the
    snapshot folder (its bubblewrap opens the staged ``/etc`` and the shadow repositories
    there) and nothing more; returns that account's group (None: no such account)."""
    owner = config().command_owner
    if owner is None:
        return None
    make_private_dir(settings.VAR_DIR, owner[1])
    make_private_dir(settings.PIWEB_SNAPSHOT_DIR, owner[1])
    return owner[1]


def session_env(session: Session) -> dict[str, str]:
    """What a session's commands get on top of the sandbox's minimal environment."""
    return {"PIWEB_SESSION_ID": session.pi_id}


def session_cwd(session: Session, leaf_pi_id=UNSET) -> str:
    """The session's real working directory at the leaf (`workspaces.session_workspace`:
    its workspace choice, checked to be in the area of the user who made it). That area
    is made private first: nothing a command leaves there is reachable by others."""
    where = workspaces.session_workspace(session, leaf_pi_id)
    traverse_gid = make_var_reachable()
    protect_user_area(where.user_pk, traverse_gid)
    return workspaces.check_session_cwd(where.cwd, where.user_pk)


def tool_context(
    session: Session,
    abort: AbortSignal | None = None,
    on_bash_snapshot: Callable[[StreamSnapshot], None] | None = None,
    *,
    leaf_pi_id=UNSET,
) -> ToolContext:
    """The agent's tools for this session: its workspace, artifacts and sandbox."""
    sandbox = config()
    workspace = Workspace(
        session_cwd(session, leaf_pi_id),
        read_roots=[workspaces.agent_skills_dir()],
        owner=sandbox.command_owner,
    )
    return ToolContext(
        workspace=workspace,
        artifact_dir=workspaces.artifact_dir(session),
        abort=abort or AbortSignal(),
        on_bash_snapshot=on_bash_snapshot,
        bash_env=session_env(session),
        sandbox=sandbox,
        bash_guard=resources.command_guard(session),
        after_bash=lambda command: resources.after_command(session, command),
        full_output_max_bytes=resources.full_output_max_bytes(),
        max_file_bytes=resources.tool_max_file_bytes(),
    )


def run_command(
    session: Session,
    command: str,
    *,
    abort: AbortSignal | None = None,
    on_snapshot: Callable[[StreamSnapshot], None] | None = None,
    timeout: float | None = None,
    output_prefix: str = "user-bash",
    leaf_pi_id=UNSET,
) -> ShellOutcome:
    """Run a user's ``!cmd`` in the session's sandbox (SandboxUnavailable if it cannot,
    CommandRefused over quota or below the disk reserve)."""
    cwd = session_cwd(session, leaf_pi_id)
    limit = settings.PIWEB_USER_BASH_TIMEOUT if timeout is None else timeout
    try:
        return run_shell(
            command,
            cwd,
            output_path=output_file_factory(workspaces.artifact_dir(session), output_prefix),
            timeout=limit or None,
            abort=abort,
            on_snapshot=on_snapshot,
            env=session_env(session),
            sandbox=config(),
            workspace=cwd,
            guard=resources.command_guard(session),
            full_output_max_bytes=resources.full_output_max_bytes(),
        )
    finally:
        resources.after_command(session, command)


__all__ = [
    "CommandRefused",
    "SandboxUnavailable",
    "check_available",
    "config",
    "run_command",
    "session_cwd",
    "status",
    "tool_context",
]
