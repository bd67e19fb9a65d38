"""Snapshots of a session's workspace, and putting the files back (state changes).

After every agent turn whose tool calls ran, and after every `!cmd`, the worker commits
the workspace to its shadow repository (`agent/snapshots.py`) and stores a FileSnapshot
row keyed by the entry that caused it: the agent reply that made the calls, or the
bashExecution entry. The commit before the run (`begin`) is the first turn's base; each
turn's commit is the next one's, so base → commit is exactly what that entry changed.

A snapshot never fails a run: git errors are logged and the run goes on without one.

`restore_files` puts the workspace back to an entry's snapshot: it commits the current
state first (so the restore can be undone by restoring to the rewind entry's base), refuses
while any run (of any session) works in an overlapping folder, and records a `custom`
entry (customType ``piweb.rewind``). A snapshot due while another session's run works
there waits for it, then is skipped with the reason on its node. The git of both runs in
the sandbox (`agent/snapshots.py`). Shadow repositories are packed and removed by the
``snapshot_gc`` job (`jobs/snapshot_gc.clean_repository`).
"""

from __future__ import annotations

import logging
import time
from functools import partial

from django.conf import settings
from django.db import transaction

from sessions_app.agent.snapshots import ShadowRepo, SnapshotError
from sessions_app.core.errors import ServiceError
from sessions_app.models import Entry, FileSnapshot, Job, Session
from sessions_app.selectors import changes as read
from sessions_app.selectors.changes import repo_for, repo_key, runs_in_folder, state_at
from sessions_app.selectors.paths import UNSET
from sessions_app.selectors.runs import run_active
from sessions_app.services import events, resources, sandboxing, sessions
from sessions_app.services.jobs import snapshot_gc

log = logging.getLogger(__name__)
REWIND_TYPE = "piweb.rewind"


class RestoreError(ServiceError):
    """Files that cannot be restored now (409 unless the raiser says otherwise)."""

    status = 409
    code = "restore"


def _repo(session: Session, leaf_pi_id=UNSET) -> ShadowRepo | None:
    """The shadow repository of the session's workspace at `leaf_pi_id` (default: its
    leaf), with the folders above it reachable by the sandbox its git runs in."""
    repo = repo_for(session, leaf_pi_id)
    if repo is not None:
        sandboxing.make_var_reachable()
    return repo


def begin(session: Session, leaf_pi_id=UNSET) -> str | None:
    """The commit of the workspace at `leaf_pi_id` (the run's branch) before a run (a
    snapshot of it as it is); None without one."""
    repo = _repo(session, leaf_pi_id)
    if repo is None:
        return None
    try:
        commit = repo.snapshot("before run")
        _gc_when_due(repo)
        return commit
    except (SnapshotError, OSError) as exc:
        log.warning("snapshot before the run of session %s failed: %s", session.pk, exc)
        return None


def _stats_rows(repo: ShadowRepo, base: str | None, commit: str) -> list[dict]:
    return [
        {
            "path": s.path,
            "status": s.status,
            "added": s.added,
            "removed": s.removed,
            "binary": s.binary,
            "old_path": s.old_path,
        }
        for s in repo.diff_stats(base, commit)
    ]


def _store(
    session: Session, entry: Entry, repo: ShadowRepo, base: str | None, commit: str, kind: str
) -> FileSnapshot:
    files = _stats_rows(repo, base, commit)
    return FileSnapshot.objects.create(
        session=session,
        entry=entry,
        kind=kind,
        repo=repo_key(repo.work_tree),
        commit=commit,
        base=base or "",
        files=files,
        added=sum(f["added"] for f in files),
        removed=sum(f["removed"] for f in files),
    )


def _space_problem(session: Session) -> str | None:
    """A restore or snapshot writes like a command: refused below the disk reserve or
    over the quota of whoever the folder's writes are charged to."""
    return resources.reserve_problem() or resources.quota_problem(resources.charged_user(session))


def _others_working(session: Session, repo: ShadowRepo) -> list[Session]:
    """Runs of other sessions working in an overlapping folder, once they had
    PIWEB_SNAPSHOT_WAIT_SECONDS to end (a snapshot taken meanwhile would record their
    half-done work as this session's)."""
    deadline = time.monotonic() + settings.PIWEB_SNAPSHOT_WAIT_SECONDS
    while True:
        others = runs_in_folder(repo.work_tree, besides=session, statuses=(Job.Status.RUNNING,))
        if not others or time.monotonic() >= deadline:
            return others
        time.sleep(0.5)


def _skip(session: Session, entry: Entry, repo: ShadowRepo, base, kind, reason: str) -> None:
    FileSnapshot.objects.create(
        session=session,
        entry=entry,
        kind=kind,
        repo=repo_key(repo.work_tree),
        commit="",
        base=base or "",
        skipped=reason[:300],
    )
    events.publish_now(session.pk, "files_changed", {"entry_id": entry.pi_id})


def record(session: Session, entry: Entry | None, base: str | None, kind: str) -> str | None:
    """Snapshot the workspace after ``entry`` ran; store a row when files changed, or a
    skipped row saying why when another session's run still works in the folder.
    Returns the new commit (the next turn's base), or ``base`` when nothing could be done.
    The workspace is the one in force at ``entry`` (a branch may work in its own)."""
    if entry is None:
        return base
    repo = _repo(session, entry.pi_id)
    if repo is None:
        return base
    if _others_working(session, repo):
        reason = (
            "No snapshot of the files after this step: a run of another session was still "
            "working in this folder, so its changes would have been counted here."
        )
        _skip(session, entry, repo, base, kind, reason)
        return base
    if problem := _space_problem(session):
        _skip(session, entry, repo, base, kind, f"No snapshot of the files: {problem}"[:300])
        return base
    try:
        commit = repo.snapshot(f"{kind} {entry.pi_id}")
        _gc_when_due(repo)
        if commit != base:
            _store(session, entry, repo, base, commit, kind)
            # The tree's counts and the chat's cards refresh (the worker: no transaction).
            events.publish_now(session.pk, "files_changed", {"entry_id": entry.pi_id})
        return commit
    except (SnapshotError, OSError) as exc:
        log.warning("snapshot after %s of session %s failed: %s", entry.pi_id, session.pk, exc)
        return base


def _gc_when_due(repo: ShadowRepo) -> None:
    """Ask for a ``git gc`` at every PIWEB_SNAPSHOT_GC_EVERY-th snapshot since the last one
    (once each time: the counter goes on until the job resets it)."""
    count, every = repo.snapshots_since_gc(), max(1, settings.PIWEB_SNAPSHOT_GC_EVERY)
    if count and count % every == 0:
        snapshot_gc.request_gc(repo_key(repo.work_tree), repo.work_tree)


def forget_repositories(session: Session) -> None:
    """When ``session`` is deleted: once that commits, ask for the clean-up of the shadow
    repository of each folder it worked in (its header's cwd and its workspace choices,
    stored as real paths); the job removes those no other session uses."""
    chosen = ((session.settings or {}).get("workspaces") or {}).values()
    folders = {session.cwd, *(choice.get("cwd") for choice in chosen)} - {None, ""}
    for folder in folders:
        transaction.on_commit(partial(snapshot_gc.request_gc, repo_key(folder), folder))


# What a fork's copy of a snapshot takes over as it is (its session and entry are its own).
SNAPSHOT_FIELDS = ("kind", "repo", "commit", "base", "files", "added", "removed", "skipped")


def copy_snapshots(source: Session, new: Session, pk_of: dict[str, int]) -> int:
    """A fork's copied entries keep their snapshots (``pk_of``: pi id → the new row's pk).
    The commits stay in the workspace's repository; a fork owned by someone else, who has
    no access to that workspace, sees the file lists without diffs."""
    rows = [
        FileSnapshot(
            session=new,
            entry_id=pk_of[snap.entry.pi_id],
            **{name: getattr(snap, name) for name in SNAPSHOT_FIELDS},
        )
        for snap in read.snapshots_with_pi_ids(source, SNAPSHOT_FIELDS)
        if snap.entry.pi_id in pk_of
    ]
    FileSnapshot.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def restore_files(session: Session, user, pi_id: str) -> Entry:
    """Put the workspace's files back to how entry ``pi_id`` left them; record it."""
    target = state_at(session, pi_id)
    if target is None:
        raise RestoreError("No file snapshot was recorded at or before this entry.", 400)
    return _restore(session, user, target.commit, {"target": pi_id})


def undo_restore(session: Session, user, rewind_pi_id: str) -> Entry:
    """Undo a restore: put the files back to how they were just before it."""
    snap = read.rewind_snapshot(session, rewind_pi_id)
    if snap is None or not snap.base:
        raise RestoreError("That entry is not a restore of files.", 400)
    return _restore(session, user, snap.base, {"undo": rewind_pi_id})


def _restore(session: Session, user, commit: str, data: dict) -> Entry:
    repo = _repo(session)
    if repo is None:
        raise RestoreError("This session has no workspace snapshots.", 400)
    if not repo.has(commit):
        raise RestoreError("That snapshot is no longer stored.", 410)
    if problem := _space_problem(session):
        raise RestoreError(f"The files cannot be restored now. {problem}", 507)
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        if run_active(locked.pk) or runs_in_folder(repo.work_tree):
            raise RestoreError(
                "A run or command is active in this folder (in this session or another "
                "that shares it); restore the files once it has finished."
            )
        try:
            before, after = repo.restore(commit, f"restore {data}")
        except SnapshotError as exc:
            raise RestoreError(f"The files could not be restored: {exc}", 500) from exc
        entry = sessions.append_entry(
            locked,
            {
                "type": "custom",
                "customType": REWIND_TYPE,
                "data": {
                    **data,
                    "commit": commit,
                    "before": before,
                    "by": getattr(user, "username", "") or "",
                },
            },
            actor=user,
        )
        _store(locked, entry, repo, before, after, FileSnapshot.Kind.REWIND)
        sessions.record_activity(locked, user, "restored files", **data)
    session.refresh_from_db()
    return entry
