"""The workspace measure job: the disk a user's workspace folders take, measured in a
worker after the user's commands (``resources.request_measure`` decides when) and stored
for the quota check (``measure_workspace``, which also strips setuid/setgid bits; the
check itself is ``resources.quota_problem``).

``created_by`` is the user measured. At most one measure per user waits in the queue
(a database constraint): it measures what is there when it runs, so a second queued one
would find the same. Measuring is idempotent, so a run whose worker died is run again.
"""

from __future__ import annotations

import logging
import os
import stat

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from sessions_app.agent.paths import is_within, user_areas
from sessions_app.agent.snapshots import WORK_TREE_FILE
from sessions_app.models import Job, WorkspaceUsage
from sessions_app.services.jobs import lifecycle

log = logging.getLogger(__name__)

Status = Job.Status
SETID = stat.S_ISUID | stat.S_ISGID


def request_measure(user_id: int) -> Job | None:
    """Queue a measure of the user's workspaces; None when one is queued already."""
    try:
        with transaction.atomic():
            job = Job.objects.create(
                kind=Job.Kind.WORKSPACE_MEASURE,
                status=Status.QUEUED,
                created_by_id=user_id,
                progress={"phase": "queued"},
            )
            lifecycle.enqueue(job)
    except IntegrityError:
        return None
    return job


def user_folders(user_id: int) -> list[str]:
    return user_areas(settings.PIWEB_WORKSPACE_ROOTS, str(user_id))


def _strip_setid(name: str, dir_fd: int) -> bool:
    """Remove setuid/setgid from ``name`` (in ``dir_fd``) if it is still a regular file
    with them: through an O_PATH descriptor, so a symlink swapped in is never followed."""
    try:
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not info.st_mode & SETID:
            return False
        os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(info.st_mode) & ~SETID)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def scan_folder(folder: str) -> tuple[int, int, int]:
    """(bytes on disk, files, setuid/setgid files fixed) of one folder tree. Symlinks are
    never followed; a file linked twice counts once."""
    total = files = stripped = 0
    seen: set[tuple[int, int]] = set()
    if not os.path.isdir(folder) or os.path.islink(folder):
        return 0, 0, 0
    for _top, dirs, names, dir_fd in os.fwalk(folder, follow_symlinks=False):
        for name in [*dirs, *names]:
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if info.st_nlink > 1:
                if key in seen:
                    continue
                seen.add(key)
            total += info.st_blocks * 512
            if stat.S_ISREG(info.st_mode):
                files += 1
                if info.st_mode & SETID and _strip_setid(name, dir_fd):
                    stripped += 1
    return total, files, stripped


def shadow_repositories_bytes(folders: list[str]) -> int:
    """The disk the shadow snapshot repositories of workspaces in ``folders`` take (each
    repository names its workspace in ``WORK_TREE_FILE``; piweb's own folder)."""
    total = 0
    snapshot_dir = os.fspath(settings.PIWEB_SNAPSHOT_DIR)
    try:
        names = os.listdir(snapshot_dir)
    except OSError:
        return 0
    for name in names:
        git_dir = os.path.join(snapshot_dir, name)
        try:
            with open(os.path.join(git_dir, WORK_TREE_FILE)) as fh:
                work_tree = fh.read()
        except OSError:
            continue
        if any(is_within(work_tree, folder) for folder in folders):
            total += scan_folder(git_dir)[0]
    return total


def measure_workspace(user_id: int) -> WorkspaceUsage:
    """Measure one user's workspace folders, and the shadow repositories of the
    workspaces in them, now and store the figure (idempotent)."""
    total = files = stripped = 0
    folders = user_folders(user_id)
    for folder in folders:
        size, count, fixed = scan_folder(folder)
        total, files, stripped = total + size, files + count, stripped + fixed
    total += shadow_repositories_bytes(folders)
    if stripped:
        log.warning("removed setuid/setgid bits from %d file(s) of user %s", stripped, user_id)
    with transaction.atomic():
        usage, _ = WorkspaceUsage.objects.select_for_update().get_or_create(
            user_id=user_id, defaults={"measured_at": timezone.now()}
        )
        usage.bytes, usage.files = total, files
        usage.stripped += stripped
        usage.measured_at = timezone.now()
        usage.save()
    return usage


def run(job: Job, attempt: int) -> str | None:
    if job.created_by_id is None:  # the user is gone, and their folders with them
        return lifecycle.finish_own(job, attempt, Status.CANCELLED, phase="done")
    usage = measure_workspace(job.created_by_id)
    return lifecycle.finish_own(
        job, attempt, Status.DONE, phase="done", bytes=usage.bytes, files=usage.files
    )


KIND = lifecycle.register(
    lifecycle.JobKind(
        kind=Job.Kind.WORKSPACE_MEASURE,
        on_stale=lifecycle.REQUEUE,
        queue=None,  # the default queue: small tasks, served with the imports
        run=run,
    )
)
