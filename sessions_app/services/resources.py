"""Disk a session's commands may take: workspace quota, free-space reserve, output cap.

- **Workspace quota** (``PIWEB_WORKSPACE_QUOTA_MB``, 0 = none): the disk a user's folders
  in every workspace root take together. It is measured in the background
  (``jobs.workspace_measure.measure_workspace``, run by a ``workspace_measure`` job,
  asked for here after each command at most every ``PIWEB_WORKSPACE_MEASURE_SECONDS``) and stored in
  :class:`~sessions_app.models.WorkspaceUsage`; before each command (the agent's bash
  tool, a user's ``!cmd``) the stored figure is compared with the quota, and a user over
  it is refused with how much to delete. The measure also removes setuid/setgid bits
  from every regular file it meets (defence in depth: the sandbox should never let one be
  made).
- **Free-space reserve** (``PIWEB_DISK_RESERVE_MB``) on the filesystems of the var folder,
  the workspace roots and the artifact folder: below it new commands are refused, and a
  running command is stopped (checked every second) with a notice, so that the database
  and Redis always keep room.
- **Full-output cap** (``PIWEB_FULL_OUTPUT_MAX_MB``): see ``context/truncate.py``.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from sessions_app.agent.shell import CommandGuard
from sessions_app.core.truncate import format_size
from sessions_app.models import Session
from sessions_app.selectors import workspaces
from sessions_app.selectors.shared_state import redis_client, redis_key
from sessions_app.services.jobs import workspace_measure

log = logging.getLogger(__name__)

MB = 1024 * 1024


def _mb(value: float) -> int:
    return int(float(value) * MB)


def full_output_max_bytes() -> int | None:
    cap = _mb(settings.PIWEB_FULL_OUTPUT_MAX_MB)
    return cap if cap > 0 else None


def tool_max_file_bytes() -> int | None:
    cap = _mb(settings.PIWEB_TOOL_MAX_FILE_MB)
    return cap if cap > 0 else None


# --- free-space reserve -----------------------------------------------------------------


def watched_paths() -> list[str]:
    paths = [os.fspath(settings.VAR_DIR), os.fspath(settings.PIWEB_ARTIFACT_DIR)]
    paths += [os.fspath(root) for root in settings.PIWEB_WORKSPACE_ROOTS]
    return paths


def free_bytes(path: str) -> int | None:
    """Free bytes for an unprivileged writer on ``path``'s filesystem (its nearest
    existing ancestor's), None when it cannot be read."""
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        info = os.statvfs(probe)
    except OSError:
        return None
    return info.f_bavail * info.f_frsize


def reserve_problem() -> str | None:
    """Words for the user when a watched filesystem has less free space than the reserve."""
    reserve = _mb(settings.PIWEB_DISK_RESERVE_MB)
    if reserve <= 0:
        return None
    seen = set()
    for path in watched_paths():
        free = free_bytes(path)
        if free is None:
            continue
        try:
            device = os.stat(path).st_dev if os.path.exists(path) else path
        except OSError:
            device = path
        if device in seen:
            continue
        seen.add(device)
        if free < reserve:
            return (
                f"The disk that holds piweb's data has only {format_size(free)} free, less "
                f"than the {format_size(reserve)} kept in reserve for the database and Redis: "
                "commands are refused (and running ones stopped) until space is freed. "
                "Delete files you no longer need, or ask an administrator."
            )
    return None


# --- workspace quota --------------------------------------------------------------------


def quota_bytes() -> int:
    return max(0, _mb(settings.PIWEB_WORKSPACE_QUOTA_MB))


# Over quota, a command that only deletes or looks still runs (how else would one make
# room?): one simple command, no redirection, no second command, no substitution.
CLEANUP_COMMAND = re.compile(r"\s*(rm|rmdir|du|ls|df|pwd|find)\b[^;&|<>`$()\n\\]*")
FIND_WRITES = re.compile(r"-(exec|execdir|ok|okdir|fprint|fprintf|fls|fprint0)\b")


def is_cleanup(command: str) -> bool:
    match = CLEANUP_COMMAND.fullmatch(command)
    return match is not None and not (match.group(1) == "find" and FIND_WRITES.search(command))


def quota_problem(user_id: int, command: str = "") -> str | None:
    """Words for the user when their last measured usage is over the quota (None for a
    command that only deletes or looks)."""
    quota = quota_bytes()
    if not quota:
        return None
    usage = workspaces.measured_usage(user_id)
    if usage is None or usage.bytes <= quota:
        return None
    if is_cleanup(command):
        return None
    request_measure(user_id)  # deleted meanwhile? then the next try may pass
    over = usage.bytes - quota
    return (
        f"Your workspaces use {format_size(usage.bytes)}, over your quota of "
        f"{format_size(quota)}: commands are refused until you delete at least "
        f"{format_size(over)}. Commands that only delete or look (rm, rmdir, find -delete, "
        "du, ls, on their own) still run; the figure is measured again after each of them "
        f"(last measured at {timezone.localtime(usage.measured_at):%H:%M:%S})."
    )


def unpack_allowance(user_id: int, folder: str) -> tuple[int, str]:
    """(bytes, why): how much an archive unpacked into ``folder`` may write for this user
    now, and the words naming the bound: the smaller of ``PIWEB_WORKSPACE_UNPACKED_MAX_MB``,
    what is left of the quota (measured now, so archives unpacked one after another add
    up) and the free space above the reserve on the folder's disk."""
    limit = _mb(settings.PIWEB_WORKSPACE_UNPACKED_MAX_MB)
    why = f"at most {format_size(limit)} per archive (PIWEB_WORKSPACE_UNPACKED_MAX_MB)"
    quota = quota_bytes()
    if quota:
        used = workspace_measure.measure_workspace(user_id).bytes
        if quota - used < limit:
            limit = max(0, quota - used)
            why = (
                f"what is left of your workspace quota of {format_size(quota)} "
                f"({format_size(used)} used)"
            )
    reserve = max(0, _mb(settings.PIWEB_DISK_RESERVE_MB))
    free = free_bytes(folder)
    if free is not None and free - reserve < limit:
        limit = max(0, free - reserve)
        why = f"the free disk space above the {format_size(reserve)} kept in reserve"
    return limit, why


def request_measure(user_id: int, *, force: bool = False) -> bool:
    """Ask a worker to measure the user's workspaces (at most once every
    ``PIWEB_WORKSPACE_MEASURE_SECONDS`` unless ``force``): a ``workspace_measure`` job,
    unless one is queued already. True when a job was queued."""
    every = max(1, int(settings.PIWEB_WORKSPACE_MEASURE_SECONDS))
    try:
        if not force and not redis_client().set(
            redis_key("measure", user_id), "1", nx=True, ex=every
        ):
            return False
    except Exception as exc:  # a Redis that is down must not fail the command
        log.warning("could not ask for a workspace measure of user %s: %s", user_id, exc)
        return False
    return workspace_measure.request_measure(user_id) is not None


# --- the guard every command of a session runs with ---------------------------------------


def charged_user(session: Session) -> int:
    """Whose quota a session's commands and file writes count against: the owner of the
    folder they write in (who chose it, `workspaces.session_workspace`), not the
    session's owner: alice continuing bob's shared session in her folder uses her own."""
    return workspaces.session_workspace(session).user_pk


def command_guard(session: Session) -> CommandGuard:
    """Refuse a command or a file write over quota or below the reserve; stop a command
    below the reserve."""
    owner = charged_user(session)

    def before(command: str) -> str | None:
        return reserve_problem() or quota_problem(owner, command)

    def during() -> str | None:
        problem = reserve_problem()
        return f"Stopped: {problem}" if problem else None

    return CommandGuard(before=before, during=during, interval=1.0)


def after_command(session: Session, command: str = "") -> None:
    """Once a command ended: its writes (or deletions, at once) count against the quota."""
    if quota_bytes():
        request_measure(charged_user(session), force=is_cleanup(command))


def status(run_slots: int | None = None) -> str:
    """The startup banner's line on quotas and fair share."""
    quota = settings.PIWEB_WORKSPACE_QUOTA_MB
    run_slots = run_slots or settings.PIWEB_WORKER_CONCURRENCY
    return (
        f"Limits: workspace quota {f'{quota:g} MB per user' if quota else 'off'}, disk "
        f"reserve {settings.PIWEB_DISK_RESERVE_MB:g} MB, full output {settings.PIWEB_FULL_OUTPUT_MAX_MB:g} MB, "
        f"{settings.PIWEB_USER_MAX_RUNS} runs at once per user; worker slots: "
        f"{run_slots} agent runs, {settings.PIWEB_COMMAND_CONCURRENCY} "
        f"commands, {settings.PIWEB_SUMMARY_CONCURRENCY} summaries, "
        f"{settings.PIWEB_IMPORT_CONCURRENCY} imports."
    )
