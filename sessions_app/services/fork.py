"""Fork a node into a new session (SPEC §8), with three scopes.

- "path": pi's createBranchedSession, done by the pure core
  (`SessionTree.create_branched_session`): the path root -> T without its label
  entries; every label (latest per target, from the whole session) that targets an
  entry of that path is re-created as a new label entry chained after T, keeping the
  label's timestamp; the header's parentSession is the source session. Entries keep
  their ids. As in pi, the leaf is the last entry written: T, or the last re-created
  label after it (the same context as T: labels are not in the context).
- "path_and_siblings" (LibreChat's "include related branches"): the path, plus every
  direct child of a path entry other than T's own children, i.e. the first entry of
  each branch that leaves the path (LibreChat's getAllMessagesUpToParent).
- "up_to_depth" (LibreChat's "all to target level"): every entry whose depth (roots are
  depth 0) is at most T's depth.
The two LibreChat scopes follow the same label rule as "path" over the entries they
keep. The new session (source=fork, parent=source, owner=actor) is written in one
transaction while the source row is locked, and the activity is recorded on both.

A fork COPIES its rows: it owns them, so deleting or archiving the source never touches
it. The "path" scope copies them with set-based SQL (`_copy_path`): one INSERT ... SELECT
over the recursive path query, the few lines pi re-chains rewritten in Python, one
UPDATE to link parents, the label entries added, and the search rows copied from the
source's (not parsed again). At 10,000 entries that is tens of milliseconds
(bench/fork_bench.py). The two LibreChat scopes still go through Python (`_fork_entries`).
"""

from __future__ import annotations

import json
import uuid

from django.db import connection, transaction

from sessions_app.core.errors import ServiceError
from sessions_app.core.jsonl import serialize_entry
from sessions_app.core.preview import entry_preview, entry_row_columns
from sessions_app.core.text import clean_text
from sessions_app.core.tree import (
    CURRENT_SESSION_VERSION,
    SessionTree,
    TreeError,
    generate_entry_id,
)
from sessions_app.core.usage import usage_with_day
from sessions_app.models import Entry, SearchDocument, Session
from sessions_app.selectors import changes as changes_selectors
from sessions_app.selectors import entries as entry_selectors
from sessions_app.selectors import paths, workspaces
from sessions_app.selectors.entries import entry_pk
from sessions_app.selectors.jobs import search_index_pending
from sessions_app.services import changes, events, sessions, usage, workspace_choice
from sessions_app.services.bulk_entries import EntryWriter, apply_labels
from sessions_app.services.jobs.search_index import copy_new_search_rows, index_new_entries

SCOPES = ("path", "path_and_siblings", "up_to_depth")


class ForkError(ServiceError):
    """The fork cannot be made (unknown entry or scope); the message says why."""

    code = "fork"


def _select(structure, target_pk: int, scope: str) -> set[int]:
    parent_of = {pk: parent for pk, _, parent, _ in structure}
    path: list[int] = []
    current: int | None = target_pk
    while current is not None and len(path) <= len(parent_of):
        path.append(current)
        current = parent_of.get(current)
    path_set = set(path)
    if scope == "path":
        return path_set
    if scope == "path_and_siblings":
        return path_set | {
            pk for pk, _, parent, _ in structure if parent in path_set and parent != target_pk
        }
    # up_to_depth: breadth-first from the roots (entries without a stored parent).
    target_depth = len(path) - 1
    children: dict[int | None, list[int]] = {}
    for pk, _, parent, _ in structure:
        children.setdefault(parent, []).append(pk)
    selected: set[int] = set()
    level = children.get(None, [])
    depth = 0
    while level and depth <= target_depth:
        selected.update(level)
        level = [child for pk in level for child in children.get(pk, ())]
        depth += 1
    return selected


def _fork_entries(source: Session, structure, target_pi_id: str, target_pk: int, scope: str):
    """(header, entries, leaf id) for a LibreChat-scope fork, as plain pi dicts."""
    selected = _select(structure, target_pk, scope)
    # Every label entry of the session counts: pi's label map is session-wide.
    wanted = [pk for pk, _, _, etype in structure if pk in selected or etype == "label"]
    loaded = entry_selectors.payloads_and_lines(wanted)
    ordered = [loaded[pk][0] for pk in wanted]
    index = SessionTree(ordered, leaf_id=target_pi_id)
    now = sessions.now_iso()
    new_id = str(uuid.uuid4())
    # The kept entries in append order, labels re-created after T.
    kept = [
        loaded[pk][0] for pk in wanted if pk in selected and loaded[pk][0].get("type") != "label"
    ]
    kept_ids = {e.get("id") for e in kept}
    path_ids = {e.get("id") for e in index.get_branch(target_pi_id)}
    path_tail = [e for e in index.get_branch(target_pi_id) if e.get("type") != "label"]
    header = {
        "type": "session",
        "version": 3,
        "id": new_id,
        "timestamp": now,
        "cwd": source.cwd,
        "parentSession": source.pi_id,
    }
    taken = set(kept_ids) | path_ids
    parent = path_tail[-1].get("id") if path_tail else None
    labels = []
    for target, label in index.labels.items():
        if target not in kept_ids:
            continue
        label_id = generate_entry_id(taken)
        taken.add(label_id)
        labels.append(
            {
                "type": "label",
                "id": label_id,
                "parentId": parent,
                "timestamp": index.get_label_timestamp(target) or now,
                "targetId": target,
                "label": label,
            }
        )
        parent = label_id
    entries = kept + labels
    leaf = labels[-1]["id"] if labels else (path_tail[-1].get("id") if path_tail else None)
    return header, entries, leaf, loaded, wanted


ENTRY = Entry._meta.db_table
DOC = SearchDocument._meta.db_table
# The columns a path fork copies as they are; id, session, parent, seq and copied are
# the fork's own.
_OWN_COLUMNS = ("id", "session_id", "parent_id", "seq", "copied")


def _copied_columns() -> list[str]:
    return [
        f.column
        for f in Entry._meta.concrete_fields
        if f.column is not None and f.column not in _OWN_COLUMNS
    ]


def _copy_path(source: Session, new: Session, target_pk: int) -> tuple[int, int | None]:
    """Write pi's createBranchedSession of `source` at `target_pk` into `new` with
    set-based SQL; returns (rows written, the leaf's pk). See the module doc."""
    path = paths.path_pks(source, target_pk)
    with connection.cursor() as cursor:
        # The label entries of the whole session: pi's label map; those on the path are
        # left out of the fork.
        cursor.execute(
            f"SELECT id, line FROM {ENTRY} WHERE session_id = %s AND type = 'label' ORDER BY seq",
            [source.pk],
        )
        label_rows = cursor.fetchall()
        label_pks = {pk for pk, _ in label_rows}
        kept = [pk for pk in path if pk not in label_pks] if label_pks else path
        if not kept:
            return 0, None
        ids = EntryWriter(new).reserve_ids(len(kept))
        _insert_copies(cursor, new, kept, ids)
        _rechain(cursor, path, kept, ids, label_pks)
    count, leaf_pk = len(kept), ids[-1]
    labels = _label_entries([json.loads(line) for _, line in label_rows], source, kept)
    if labels:
        count, leaf_pk = _write_labels(new, labels, leaf_pk, count)
    # Usage: the copies count in the fork's own total (copied), not again in totals
    # over sessions (selectors/usage.py).
    usage.recount(new)
    return count, leaf_pk


def _insert_copies(cursor, new: Session, kept: list[int], ids: list[int]) -> None:
    """One INSERT ... SELECT: row `kept[i]` copied as `ids[i]`, seq i, its parent the
    copy before it (pi re-chains the path)."""
    columns = _copied_columns()
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    picked = ", ".join(f"e.{connection.ops.quote_name(c)}" for c in columns)
    into = f"INSERT INTO {ENTRY} (id, session_id, parent_id, seq, copied, {names})"
    if connection.vendor == "postgresql":
        parents = [None, *ids[:-1]]
        cursor.execute(
            f"{into} SELECT m.id, %s, m.parent_id, m.seq - 1, TRUE, {picked}"
            " FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[])"
            " WITH ORDINALITY AS m(old, id, parent_id, seq)"
            f" JOIN {ENTRY} e ON e.id = m.old",
            [new.pk, kept, ids, parents],
        )
        return
    # SQLite reserves a contiguous block (we hold its write lock): ids[0] + seq.
    assert ids == list(range(ids[0], ids[0] + len(ids)))
    cursor.execute(
        f"{into} SELECT %s + m.key, %s,"
        " CASE WHEN m.key = 0 THEN NULL ELSE %s + m.key - 1 END, m.key, 1,"
        f" {picked} FROM json_each(%s) m JOIN {ENTRY} e ON e.id = m.value",
        [ids[0], new.pk, ids[0], json.dumps(kept)],
    )


def _rechain(cursor, path: list[int], kept: list[int], ids: list[int], label_pks) -> None:
    """pi re-chains the kept entries (each one's parentId is the one before it): rewrite
    the lines of the few whose parentId changes: the root (its parentId may point
    nowhere, or be missing) and each entry that hung off a dropped label entry."""
    parent_of = dict(zip(path[1:], path[:-1], strict=True))
    candidates = [0, *(i for i, pk in enumerate(kept) if i and parent_of.get(pk) in label_pks)]
    wanted = sorted({ids[i] for i in candidates} | {ids[i - 1] for i in candidates if i})
    marks = ", ".join(["%s"] * len(wanted))
    cursor.execute(f"SELECT id, pi_id, line FROM {ENTRY} WHERE id IN ({marks})", wanted)
    rows = {pk: (pi_id, line) for pk, pi_id, line in cursor.fetchall()}
    updates = []
    for i in candidates:
        payload = json.loads(rows[ids[i]][1])
        parent = rows[ids[i - 1]][0] if i else None
        if "parentId" not in payload or payload["parentId"] != parent:
            # As JS's {...entry, parentId}: in the key's place, or last.
            updates.append((serialize_entry({**payload, "parentId": parent}), parent, ids[i]))
    if updates:
        cursor.executemany(
            f"UPDATE {ENTRY} SET line = %s, parent_pi_id = %s WHERE id = %s", updates
        )


def _label_entries(label_entries: list[dict], source: Session, kept: list[int]) -> list:
    """pi's label map (latest label per target, session-wide), for the targets on the
    fork's path: [(target pi id, label, timestamp)], in the map's order."""
    if not label_entries:
        return []
    index = SessionTree(label_entries)
    kept_set = set(kept)
    found = entry_selectors.pks_by_pi_id(source, index.labels)
    on_path = {pi_id for pi_id, pk in found.items() if pk in kept_set}
    return [
        (target, label, index.get_label_timestamp(target))
        for target, label in index.labels.items()
        if target in on_path
    ]


def _write_labels(new: Session, labels: list, leaf_pk: int, count: int) -> tuple[int, int]:
    """The label entries pi re-creates, chained after the path's last entry; returns
    (rows in the fork, the leaf's pk)."""
    parent = entry_selectors.pi_id_of(leaf_pk)
    parent_pk = leaf_pk
    now = sessions.now_iso()
    taken: set[str] = set()
    with EntryWriter(new) as writer:
        for seq, (target, label, stamp) in enumerate(labels, start=count):
            label_id = _new_label_id(new, taken)
            taken.add(label_id)
            entry = {
                "type": "label",
                "id": label_id,
                "parentId": parent,
                "timestamp": stamp or now,
                "targetId": target,
                "label": label,
            }
            pk = writer.new_pk()
            writer.add(
                pk=pk,
                pi_id=label_id,
                parent_pk=parent_pk,
                parent_pi_id=parent,
                seq=seq,
                line=serialize_entry(entry),
                columns=entry_row_columns(entry),
            )
            parent, parent_pk = label_id, pk
    return count + len(labels), parent_pk


def _new_label_id(new: Session, taken: set[str]) -> str:
    """A fresh entry id, as pi's generateId: none the fork holds yet."""
    while True:
        candidate = generate_entry_id(taken)
        if not entry_selectors.entry_exists(new, candidate):
            return candidate
        taken.add(candidate)


def _index_copies(source: Session, new: Session, count: int) -> None:
    """The fork's search rows are the source's, copied (a few here, more by a job after
    the commit); when the source's own are not all written yet (its import's search job
    has not run), the fork is indexed from its lines instead."""
    if search_index_pending(source.pk):
        index_new_entries(new.pk, 0, count)
    else:
        copy_new_search_rows(source.pk, new.pk, count)


def fork_session(session: Session, target_pi_id: str, scope: str = "path", actor=None) -> Session:
    """A new session holding the chosen part of `session` up to entry `target_pi_id`."""
    if scope not in SCOPES:
        raise ForkError(f"Unknown fork scope {scope!r}; choose one of {', '.join(SCOPES)}.")
    with transaction.atomic():
        source = sessions.lock_session(session.pk)
        target_pk = entry_pk(source, target_pi_id)
        if target_pk is None:
            raise ForkError(f"No entry {target_pi_id!r} in session {source.pi_id}.")
        if scope == "path":
            new = _new_session(source, actor, target_pi_id, "")
            count, leaf_pk = _copy_path(source, new, target_pk)
            new.first_message = clean_text(entry_selectors.last_user_preview(new))[:300]
            pk_of = None
        else:
            new, pk_of, leaf_pk = _fork_in_python(source, actor, target_pi_id, target_pk, scope)
            count = len(pk_of)
        if changes_selectors.has_snapshots(source):
            pk_of = pk_of if pk_of is not None else entry_selectors.all_pks_by_pi_id(new)
            changes.copy_snapshots(source, new, pk_of)
        new.leaf_id = leaf_pk
        new.next_seq = count
        new.entry_count = count
        new.save()
        if scope == "path":
            _index_copies(source, new, count)
        else:
            index_new_entries(new.pk, 0, count)
        if (source.settings or {}).get("workspaces"):
            pk_of = pk_of if pk_of is not None else entry_selectors.all_pks_by_pi_id(new)
            workspace_choice.copy_choices(source, new, pk_of.keys(), only_by=actor.pk)
        details = {"target": target_pi_id, "scope": scope, "entries": count}
        sessions.record_activity(source, actor, "forked", to=new.pi_id, **details)
        sessions.record_activity(new, actor, "forked_from", source=source.pi_id, **details)
        events.publish_sessions_changed([new.pk])
    return new


def _new_session(source: Session, actor, target_pi_id: str, first_message: str) -> Session:
    """The fork's session row. A fork gets its own title: not its source's name (a copied
    session_info), but the last user message it copies, where it leaves the source (a
    rename later writes a session_info of its own). It starts where the source works at
    the fork point (its workspace choice)."""
    fork_cwd = workspaces.session_workspace(source, target_pi_id).cwd or source.cwd
    return Session.objects.create(
        pi_id=str(uuid.uuid4()),
        version=CURRENT_SESSION_VERSION,
        cwd=fork_cwd,
        header_timestamp=sessions.now_iso(),
        parent_session_ref=source.pi_id,
        parent=source,
        name="",
        owner=actor,
        source=Session.Source.FORK,
        first_message=clean_text(first_message)[:300],
        model_profile=source.model_profile,
    )


def _fork_in_python(source: Session, actor, target_pi_id: str, target_pk: int, scope: str):
    """The LibreChat scopes: (new session, pi id -> new pk, the leaf's pk)."""
    structure = entry_selectors.structure(source)
    try:
        _header, entries, leaf_id, loaded, _ = _fork_entries(
            source, structure, target_pi_id, target_pk, scope
        )
    except TreeError as exc:
        raise ForkError(f"Cannot fork at {target_pi_id}: {exc}") from exc
    # Lines of copied entries are reused as they are (same content, same text).
    line_of = {id(payload): line for payload, line in loaded.values()}
    first_message = ""
    for entry in entries:
        if entry.get("type") == "message" and (entry.get("message") or {}).get("role") == "user":
            first_message = entry_preview(entry)
    new = _new_session(source, actor, target_pi_id, first_message)
    labels: dict[str, str] = {}
    with EntryWriter(new) as writer:
        ids = writer.reserve_ids(len(entries)) if entries else []
        pk_of = {entry.get("id"): pk for entry, pk in zip(entries, ids, strict=True)}
        for seq, (entry, pk) in enumerate(zip(entries, ids, strict=True)):
            parent_id = entry.get("parentId")
            if entry.get("type") == "label":
                labels[entry.get("targetId")] = entry.get("label") or ""
            copied_line = line_of.get(id(entry))
            writer.add(
                pk=pk,
                pi_id=entry["id"],
                parent_pk=pk_of.get(parent_id) if parent_id else None,
                parent_pi_id=parent_id,
                seq=seq,
                line=copied_line or serialize_entry(entry),
                columns=entry_row_columns(entry),
                usage=usage_with_day(entry),
                # Copied entries count in this session's own total, not again in a
                # total over both sessions (selectors/usage.py).
                copied=copied_line is not None,
            )
    if labels:
        apply_labels(new, {t: lab for t, lab in labels.items() if t in pk_of})
    return new, pk_of, pk_of.get(leaf_id)


def hand_over_copies(session: Session) -> list[Session]:
    """Before `session` is deleted (under its lock): its forks own their rows, so each
    stays whole; this keeps usage counted once (selectors/usage.counted_rows skips a
    fork's copies while its parent is counted). The oldest fork becomes the holder of
    the entries `session` held as its own: its copies of them count as its own now, and
    it hangs where `session` hung. The other forks hang off it; their copies of entries
    it does not hold count as their own. Returns the forks, recounted."""
    forks = [sessions.lock_session(fork.pk) for fork in session.forks.order_by("pk")]
    if not forks:
        return []
    heir, others = forks[0], forks[1:]
    own = Entry.objects.filter(session=session, copied=False).values("pi_id")
    Entry.objects.filter(session=heir, copied=True, pi_id__in=own).update(copied=False)
    held = Entry.objects.filter(session=heir).values("pi_id")
    for other in others:
        Entry.objects.filter(session=other, copied=True, pi_id__in=own).exclude(
            pi_id__in=held
        ).update(copied=False)
    Session.objects.filter(pk=heir.pk).update(parent=session.parent_id)
    Session.objects.filter(pk__in=[other.pk for other in others]).update(parent=heir)
    for fork in forks:
        fork.refresh_from_db()
        usage.recount(fork)
    return forks
