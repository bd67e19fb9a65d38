"""What the agent changed in the files: per node, per branch, and two branches compared.

A node's changes come from its file snapshot (`services/changes.py` records them: base →
commit of the workspace's shadow repository, diffed by git). A session without snapshots (imported
from pi) gets its `edit` and `write` calls replayed (`core/file_changes.py`), marked
as reconstructed. Every diff is cut to PIWEB_DIFF_MAX_FILE_BYTES per file and
PIWEB_DIFF_MAX_TOTAL_BYTES per answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.db.models import Count, F

from sessions_app.agent.paths import WorkspaceError, is_within
from sessions_app.agent.snapshots import ShadowRepo, SnapshotError
from sessions_app.core.compare import compare_branches
from sessions_app.core.file_changes import (
    FILE_TOOLS,
    FileChange,
    file_calls,
    reconstruct,
    reconstruct_tree,
    summarize,
    tool_results,
)
from sessions_app.models import Entry, FileSnapshot, Job, Session
from sessions_app.selectors import paths, workspaces
from sessions_app.selectors.entries import get_entry


def repo_key(work_tree: str) -> str:
    return hashlib.sha256(os.fsencode(work_tree)).hexdigest()[:32]


def repo_at(work_tree: str) -> ShadowRepo:
    """The shadow repository of the workspace whose real path is ``work_tree``."""
    git_dir = os.path.join(os.fspath(settings.PIWEB_SNAPSHOT_DIR), repo_key(work_tree) + ".git")
    return ShadowRepo(
        git_dir,
        work_tree,
        max_file_bytes=settings.PIWEB_SNAPSHOT_MAX_FILE_KB * 1024,
        sandbox=workspaces.sandbox_config(),
    )


def repo_for(session: Session, leaf_pi_id=paths.UNSET) -> ShadowRepo | None:
    """The repository of the session's workspace at `leaf_pi_id` (default: its leaf; a
    branch may work in a folder of its own); None when snapshots are off or the session
    has no workspace here (an imported session whose cwd is elsewhere)."""
    if not settings.PIWEB_SNAPSHOTS:
        return None
    real = workspaces.session_folder(session, leaf_pi_id)
    return repo_at(real) if real else None


def runs_in_folder(
    work_tree: str, *, besides: Session | None = None, statuses=Job.ACTIVE
) -> list[Session]:
    """Sessions other than ``besides`` with a run (an agent turn or a command) queued or
    working (``statuses``) in a folder that overlaps ``work_tree`` (the same folder, one
    inside it or one holding it), whoever started them."""
    jobs = Job.objects.filter(kind=Job.Kind.AGENT_RUN, status__in=statuses)
    if besides is not None:
        jobs = jobs.exclude(session=besides)
    found = []
    for job in jobs.select_related("session"):
        if job.session is None:
            continue
        try:
            cwd = workspaces.session_cwd(job.session)
        except WorkspaceError:
            continue
        if is_within(cwd, work_tree) or is_within(work_tree, cwd):
            found.append(job.session)
    return found


def has_snapshots(session: Session) -> bool:
    """Whether any node of the session has a snapshot of its workspace."""
    return FileSnapshot.objects.filter(session=session).exists()


def state_at(session: Session, pi_id: str) -> FileSnapshot | None:
    """The newest snapshot on the path root → ``pi_id``: the files as that node left them."""
    entry = get_entry(session, pi_id)
    pks = paths.path_entry_pks(entry.pk)
    position = {pk: i for i, pk in enumerate(pks)}
    snaps = list(FileSnapshot.objects.filter(session=session, entry_id__in=pks, skipped=""))
    if not snaps:
        return None
    return max(snaps, key=lambda s: (position[s.entry_id], s.pk))


@dataclass
class ChangeSet:
    files: list[FileChange] = field(default_factory=list)
    source: str = "none"  # "snapshot" | "reconstructed" | "none"
    base: str = ""
    commit: str = ""
    start_id: str | None = None  # the node the changes are counted from (branch views)
    end_id: str | None = None
    note: str = ""
    truncated: bool = False

    @property
    def totals(self) -> dict:
        return summarize(self.files)

    def as_dict(self, *, diffs: bool = True) -> dict:
        files = []
        for f in self.files:
            row = f.as_dict()
            if not diffs:
                row.pop("diff")
            files.append(row)
        return {
            "source": self.source,
            "base": self.base,
            "commit": self.commit,
            "from": self.start_id,
            "to": self.end_id,
            "note": self.note,
            "truncated": self.truncated,
            "totals": self.totals,
            "files": files,
        }


# ---------------------------------------------------------------------------- snapshots


def snapshots_by_pi_id(session: Session, pi_ids=None) -> dict[str, FileSnapshot]:
    """The newest snapshot of each entry (of ``pi_ids`` when given)."""
    rows = FileSnapshot.objects.filter(session=session, skipped="")
    if pi_ids is not None:
        rows = rows.filter(entry__pi_id__in=list(pi_ids))
    out: dict[str, FileSnapshot] = {}
    for snap in rows.annotate(pi_id=F("entry__pi_id")).order_by("pk"):
        out[snap.pi_id] = snap
    return out


def snapshots_exist(session: Session) -> bool:
    return FileSnapshot.objects.filter(session=session).exists()


def change_counts(session: Session) -> dict[str, dict]:
    """pi id → {files, added, removed, kind} for the tree rows and the chat cards (one
    query), with ``skipped`` saying why when no snapshot was taken after that entry."""
    counts: dict[str, dict] = {}
    rows = FileSnapshot.objects.filter(session=session).order_by("pk")
    for pi_id, files, added, removed, kind, skipped in rows.values_list(
        "entry__pi_id", "files", "added", "removed", "kind", "skipped"
    ):
        counts[pi_id] = {"files": len(files), "added": added, "removed": removed, "kind": kind}
        if skipped:
            counts[pi_id]["skipped"] = skipped
    return counts


MAX_RECONSTRUCTED_ENTRIES = 3000


class _LightIndex:
    """The parent links, roles and tool names of a session's entries (no payloads): what
    replaying its file calls needs to find them (the tree panel's TreeIndex fits too)."""

    def __init__(self, session: Session):
        from types import SimpleNamespace

        self.nodes: dict[int, SimpleNamespace] = {}
        self.ordered = []
        rows = (
            Entry.objects.filter(session=session)
            .order_by("seq")
            .values_list("pk", "pi_id", "parent_id", "role", "tool_name")
        )
        for pk, pi_id, parent, role, tool_name in rows.iterator(chunk_size=5000):
            node = SimpleNamespace(pk=pk, id=pi_id, parent=parent, role=role, tool_name=tool_name)
            self.nodes[pk] = node
            self.ordered.append(node)


def _replay_tree(session: Session, index, path_to: int | None = None) -> dict[str, list]:
    """pi id → the changes its edit/write calls made, each branch replayed on its own
    path. With ``path_to`` (an entry pk) only the calls on the path to it are replayed."""
    nodes = index.nodes
    on_path: set[int] | None = None
    if path_to is not None:
        on_path, node = set(), nodes.get(path_to)
        while node is not None and node.pk not in on_path:
            on_path.add(node.pk)
            node = nodes.get(node.parent) if node.parent is not None else None
    candidates: set[int] = set()
    results_of: list[tuple[int, int]] = []  # (tool result pk, its reply's pk)
    for node in index.ordered:
        if node.role == "assistant" and node.tool_name in FILE_TOOLS:
            if on_path is None or node.pk in on_path:
                candidates.add(node.pk)
        elif node.role == "toolResult" and node.tool_name in FILE_TOOLS:
            up = nodes.get(node.parent) if node.parent is not None else None
            for _ in range(64):  # a reply's results follow each other
                if up is None or up.role != "toolResult":
                    break
                up = nodes.get(up.parent) if up.parent is not None else None
            if up is not None and up.role == "assistant":
                if on_path is None or up.pk in on_path:
                    candidates.add(up.pk)
                    results_of.append((node.pk, up.pk))
    if not candidates or len(candidates) > MAX_RECONSTRUCTED_ENTRIES:
        return {}
    result_pks = [pk for pk, reply in results_of if reply in candidates]
    lines = dict(Entry.objects.filter(pk__in=[*candidates, *result_pks]).values_list("pk", "line"))
    results = tool_results([json.loads(lines[pk]) for pk in result_pks if pk in lines])
    nearest: dict[int, int | None] = {}
    entries = []
    for node in index.ordered:  # parents come before their children
        parent = nodes.get(node.parent) if node.parent is not None else None
        if parent is None or parent is node:
            nearest[node.pk] = None
        else:
            nearest[node.pk] = parent.pk if parent.pk in candidates else nearest.get(parent.pk)
        if node.pk in candidates and node.pk in lines:
            ancestor = nearest[node.pk]
            entries.append(
                (node.id, nodes[ancestor].id if ancestor else None, json.loads(lines[node.pk]))
            )
    return reconstruct_tree(entries, results, session.cwd)


def reconstructed_counts(session: Session, index) -> dict[str, dict]:
    """pi id → counts of the edit/write calls replayed over the whole tree (sessions
    without snapshots), from the tree's light index plus the few payloads involved."""
    return {
        pi_id: {**summarize(changes), "kind": "reconstructed", "reconstructed": True}
        for pi_id, changes in _replay_tree(session, index).items()
    }


def _bounded(changes: list[FileChange]) -> bool:
    per_file = settings.PIWEB_DIFF_MAX_FILE_BYTES
    budget = settings.PIWEB_DIFF_MAX_TOTAL_BYTES
    cut = False
    for change in changes:
        if len(change.diff) > per_file:
            change.diff = change.diff[:per_file]
            change.diff = change.diff[: change.diff.rfind("\n") + 1]
            change.truncated = cut = True
        if len(change.diff) > budget:
            change.diff = change.diff[:budget]
            change.diff = change.diff[: change.diff.rfind("\n") + 1]
            change.truncated = cut = True
        budget = max(0, budget - len(change.diff))
    return cut


def _split_diff(text: str) -> list[str]:
    chunks: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("diff --git ") or not chunks:
            chunks.append(line)
        else:
            chunks[-1] += line
    return chunks


def _git_changes(
    session: Session, base: str, commit: str, *, diffs: bool, at=paths.UNSET
) -> list[FileChange]:
    repo = repo_for(session, at)
    if repo is None or not commit:
        return []
    stats = repo.diff_stats(base or None, commit)
    texts = _split_diff(repo.diff_text(base or None, commit)) if diffs and stats else []
    if len(texts) != len(stats):
        texts = [""] * len(stats)
    return [FileChange(**asdict(s), diff=text) for s, text in zip(stats, texts, strict=True)]


def _from_rows(snap: FileSnapshot) -> list[FileChange]:
    """A snapshot's cached file list, when git cannot give the diff any more."""
    return [
        FileChange(
            path=f["path"],
            status=f["status"],
            added=f["added"],
            removed=f["removed"],
            binary=f.get("binary", False),
            old_path=f.get("old_path", ""),
        )
        for f in snap.files
    ]


def _snapshot_set(
    session: Session,
    base: str,
    commit: str,
    fallback: FileSnapshot | None,
    diffs: bool,
    at=paths.UNSET,
) -> ChangeSet:
    """The changes base → commit, read from the repository of the workspace in force at
    the entry `at` (default: the leaf; a branch may work in a folder of its own)."""
    result = ChangeSet(source="snapshot", base=base, commit=commit)
    if repo_for(session, at) is None:  # e.g. a fork owned by someone without that workspace
        result.note = "The workspace's snapshots are not reachable from this session."
        result.files = _from_rows(fallback) if fallback is not None else []
        return result
    try:
        result.files = _git_changes(session, base, commit, diffs=diffs, at=at)
    except SnapshotError as exc:
        result.note = f"The diff could not be read: {exc}"
        result.files = _from_rows(fallback) if fallback is not None else []
    result.truncated = _bounded(result.files)
    return result


# ---------------------------------------------------------------------------- reconstructed


def _path_with_results(session: Session, pi_id: str) -> list[dict]:
    """The path to ``pi_id`` plus the tool results that follow it (its calls' outcomes)."""
    path = paths.load_path(session, pi_id)
    entry = Entry.objects.filter(session=session, pi_id=pi_id).only("pk").first()
    follow = []
    current = entry
    for _ in range(64):
        child = (
            Entry.objects.filter(session=session, parent=current, role="toolResult")
            .order_by("seq")
            .first()
        )
        if child is None:
            break
        follow.append(child.payload)
        current = child
    return path + follow


def _merge(per_entry: list[list[FileChange]]) -> list[FileChange]:
    merged: dict[str, FileChange] = {}
    for changes in per_entry:
        for change in changes:
            if change.path not in merged:
                merged[change.path] = FileChange(**change.as_dict())
                continue
            into = merged[change.path]
            into.added += change.added
            into.removed += change.removed
            into.diff += change.diff
            into.partial = into.partial or change.partial
    return list(merged.values())


# ---------------------------------------------------------------------------- reads


def entry_changes(session: Session, pi_id: str, *, diffs: bool = True) -> ChangeSet:
    """What entry ``pi_id`` changed in the files."""
    snap = snapshots_by_pi_id(session, [pi_id]).get(pi_id)
    if snap is not None:
        result = _snapshot_set(session, snap.base, snap.commit, snap, diffs, pi_id)
        result.start_id = result.end_id = pi_id
        return result
    entry = Entry.objects.filter(session=session, pi_id=pi_id).only("line").first()
    if entry is None or not file_calls(entry.payload):
        return ChangeSet(end_id=pi_id)
    # Only the file calls on its path are read (not the whole path's payloads).
    changes = _replay_tree(session, _LightIndex(session), path_to=entry.pk).get(pi_id, [])
    result = ChangeSet(files=changes, source="reconstructed" if changes else "none", end_id=pi_id)
    result.start_id = pi_id
    result.truncated = _bounded(result.files)
    return result


def branch_point(session: Session, path_ids: list[str]) -> str | None:
    """The deepest node above the last one of ``path_ids`` with more than one child."""
    if len(path_ids) < 2:
        return None
    ancestors = path_ids[:-1]
    forks = set(
        Entry.objects.filter(session=session, parent__pi_id__in=ancestors)
        .values("parent__pi_id")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
        .values_list("parent__pi_id", flat=True)
    )
    for pi_id in reversed(ancestors):
        if pi_id in forks:
            return pi_id
    return None


def segment_changes(
    session: Session, segment: list[dict], start_id: str | None, *, diffs: bool = True
) -> ChangeSet:
    """Everything changed by the entries of ``segment`` (one path piece, root first)."""
    ids = [e.get("id") for e in segment]
    end_id = ids[-1] if ids else None
    snaps = snapshots_by_pi_id(session, ids)
    ordered = [snaps[i] for i in ids if i in snaps]
    if ordered:
        first, last = ordered[0], ordered[-1]
        result = _snapshot_set(session, first.base, last.commit, None, diffs, end_id)
    else:
        payloads = segment
        if start_id:
            payloads = paths.load_path(session, start_id) + segment
        if end_id:
            payloads = payloads + _path_with_results(session, end_id)[len(payloads) :]
        per_entry = reconstruct(payloads, session.cwd)
        files = _merge([per_entry[i] for i in ids if i in per_entry])
        result = ChangeSet(files=files, source="reconstructed" if files else "none")
        result.truncated = _bounded(result.files)
    result.start_id, result.end_id = start_id, end_id
    return result


def branch_changes(
    session: Session, leaf_pi_id: str, start_pi_id: str | None = None, *, diffs: bool = True
) -> ChangeSet:
    """Everything changed from the branch point (or ``start_pi_id``) down to the leaf."""
    path = paths.load_path(session, leaf_pi_id)
    ids: list[str] = [e.get("id") or "" for e in path]
    start = start_pi_id if start_pi_id in ids else branch_point(session, ids)
    segment = path[ids.index(start) + 1 :] if start else path
    return segment_changes(session, segment, start, diffs=diffs)


def path_changes(
    session: Session, leaf_pi_id: str | None, *, budget: int | None = None
) -> list[tuple[dict, ChangeSet]]:
    """Every entry on the path root → leaf that changed files, with its changes. With
    ``budget`` (bytes of diff text for the whole path), later diffs are dropped past it."""
    if not leaf_pi_id:
        return []
    path = paths.load_path(session, leaf_pi_id)
    snaps = snapshots_by_pi_id(session, [e.get("id") for e in path])
    rebuilt = reconstruct(path, session.cwd) if not snaps else {}
    out = []
    left = settings.PIWEB_DIFF_MAX_TOTAL_BYTES if budget is None else budget
    for payload in path:
        pi_id = payload.get("id")
        if pi_id in snaps:
            snap = snaps[pi_id]
            change = _snapshot_set(session, snap.base, snap.commit, snap, left > 0, pi_id)
        elif pi_id in rebuilt:
            change = ChangeSet(files=rebuilt[pi_id], source="reconstructed")
            change.truncated = _bounded(change.files)
        else:
            continue
        for f in change.files:
            if len(f.diff) > left:
                f.diff = f.diff[: max(left, 0)]
                f.diff = f.diff[: f.diff.rfind("\n") + 1]
                f.truncated = change.truncated = True
            left -= len(f.diff)
        change.start_id = change.end_id = pi_id
        out.append((payload, change))
    return out


def compare_changes(session: Session, a_pi_id: str, b_pi_id: str) -> dict:
    """The file changes of two branches below their common ancestor."""
    seen: dict[str, dict] = {}
    for pi_id in (a_pi_id, b_pi_id):
        for entry in paths.load_path(session, pi_id):
            seen[entry["id"]] = entry
    result = compare_branches(list(seen.values()), a_pi_id, b_pi_id)
    ancestor = result["ancestorId"]
    return {
        "ancestor": ancestor,
        "a": segment_changes(session, result["a"]["segment"], ancestor),
        "b": segment_changes(session, result["b"]["segment"], ancestor),
    }


def snapshots_with_pi_ids(session: Session, fields) -> list[FileSnapshot]:
    """The session's snapshots (only `fields` loaded) with their entry's pi id."""
    return list(
        FileSnapshot.objects.filter(session=session)
        .select_related("entry")
        .only(*fields, "entry__pi_id")
    )


def rewind_snapshot(session: Session, rewind_pi_id: str) -> FileSnapshot | None:
    """The snapshot a restore recorded at its rewind entry `rewind_pi_id` (the files as
    they were just before it), or None."""
    return (
        FileSnapshot.objects.filter(
            session=session, entry__pi_id=rewind_pi_id, kind=FileSnapshot.Kind.REWIND
        )
        .order_by("-pk")
        .first()
    )


def repository_in_use(key: str, work_tree: str) -> bool:
    """Whether a shadow repository (`key`, for `work_tree`) is still needed: a snapshot
    row refers to it, or a session starts in its workspace."""
    return (
        FileSnapshot.objects.filter(repo=key).exists()
        or Session.objects.filter(cwd=work_tree).exists()
    )
