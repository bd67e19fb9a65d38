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
from sessions_app.selectors import workspaces
from sessions_app.selectors.entries import entry_pk
from sessions_app.selectors.paths import MAX_PATH_DEPTH
from sessions_app.services import changes, events, sessions, usage, workspace_choice
from sessions_app.services.bulk_entries import EntryWriter, apply_labels
from sessions_app.services.jobs.search_index import index_new_entries, index_pending

SCOPES = ("path", "path_and_siblings", "up_to_depth")


class ForkError(ServiceError):
    """The fork cannot be made (unknown entry or scope); the message says why."""

    code = "fork"


def _structure(session: Session) -> list[tuple[int, str, int | None, str]]:
    """(pk, pi id, parent pk, type) of every entry, in seq order: ids only."""
    return list(
        Entry.objects.filter(session=session)
        .order_by("seq")
        .values_list("pk", "pi_id", "parent_id", "type")
    )


def _load(pks: list[int]) -> dict[int, tuple[dict, str]]:
    """pk -> (payload, line) for the given entries."""
    out: dict[int, tuple[dict, str]] = {}
    table = Entry._meta.db_table
    with connection.cursor() as cursor:
        for start in range(0, len(pks), 2000):
            chunk = pks[start : start + 2000]
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(f"SELECT id, line FROM {table} WHERE id IN ({marks})", chunk)
            for pk, line in cursor.fetchall():
                out[pk] = (json.loads(line), line)
    return out


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
    loaded = _load(wanted)
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


def _first_message(target_pk: int) -> str:
    """The preview of the last user message on the path root -> target."""
    sql = f"""
        WITH RECURSIVE path(id, parent_id, depth) AS (
            SELECT id, parent_id, 0 FROM {ENTRY} WHERE id = %s
            UNION ALL
            SELECT e.id, e.parent_id, p.depth + 1
            FROM {ENTRY} e JOIN path p ON e.id = p.parent_id
            WHERE p.depth < %s
        )
        SELECT e.preview FROM path p JOIN {ENTRY} e ON e.id = p.id
        WHERE e.type = 'message' AND e.role = 'user' ORDER BY p.depth LIMIT 1
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [target_pk, MAX_PATH_DEPTH])
        row = cursor.fetchone()
    return row[0] if row else ""


def _copy_path(source: Session, new: Session, target_pk: int) -> tuple[dict[str, int], int | None]:
    """Write pi's createBranchedSession of `source` at `target_pk` into `new` with
    set-based SQL; returns (pi id -> new pk, the leaf's pk). See the module doc."""
    columns = _copied_columns()
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    picked = ", ".join(f"e.{connection.ops.quote_name(c)}" for c in columns)
    with connection.cursor() as cursor:
        # 1. The path's entries without its label entries, root first, seq 0, 1, ...
        cursor.execute(
            f"""
            WITH RECURSIVE path(id, parent_id, depth) AS (
                SELECT id, parent_id, 0 FROM {ENTRY} WHERE id = %s
                UNION ALL
                SELECT e.id, e.parent_id, p.depth + 1
                FROM {ENTRY} e JOIN path p ON e.id = p.parent_id
                WHERE p.depth < %s
            )
            INSERT INTO {ENTRY} (session_id, parent_id, seq, copied, {names})
            SELECT %s, NULL, ROW_NUMBER() OVER (ORDER BY p.depth DESC) - 1, %s, {picked}
            FROM path p JOIN {ENTRY} e ON e.id = p.id
            WHERE e.type <> 'label'
            """,
            [target_pk, MAX_PATH_DEPTH, new.pk, True],
        )
        cursor.execute(
            f"SELECT id, pi_id, parent_pi_id FROM {ENTRY} WHERE session_id = %s ORDER BY seq",
            [new.pk],
        )
        rows = cursor.fetchall()
        # 2. pi re-chains the kept entries (each one's parent is the one before it):
        # rewrite the few whose parentId changes (after a dropped label; a root whose
        # parentId pointed nowhere, or had none).
        expected = [None, *(pi_id for _, pi_id, _ in rows[:-1])]
        changed = [
            (pk, parent)
            for index, ((pk, _, written), parent) in enumerate(zip(rows, expected, strict=True))
            if written != parent or index == 0
        ]
        if changed:
            marks = ", ".join(["%s"] * len(changed))
            cursor.execute(
                f"SELECT id, line FROM {ENTRY} WHERE id IN ({marks})", [pk for pk, _ in changed]
            )
            lines = dict(cursor.fetchall())
            updates = []
            for pk, parent in changed:
                payload = json.loads(lines[pk])
                if "parentId" not in payload or payload["parentId"] != parent:
                    # As JS's {...entry, parentId}: in the key's place, or last.
                    rechained = {**payload, "parentId": parent}
                    updates.append((serialize_entry(rechained), parent, pk))
            if updates:
                cursor.executemany(
                    f"UPDATE {ENTRY} SET line = %s, parent_pi_id = %s WHERE id = %s", updates
                )
        # 3. Parents: each kept entry's parent is the one before it.
        cursor.execute(
            f"UPDATE {ENTRY} SET parent_id = (SELECT p.id FROM {ENTRY} p"
            f" WHERE p.session_id = {ENTRY}.session_id AND p.seq = {ENTRY}.seq - 1)"
            f" WHERE session_id = %s AND seq > 0",
            [new.pk],
        )
        # 4. The search rows of the copied entries, copied from the source's.
        cursor.execute(
            f"""
            INSERT INTO {DOC} (entry_id, session_id, role, tool_name, date, text)
            SELECT n.id, n.session_id, d.role, d.tool_name, d.date, d.text
            FROM {ENTRY} n
            JOIN {ENTRY} o ON o.session_id = %s AND o.pi_id = n.pi_id
            JOIN {DOC} d ON d.entry_id = o.id
            WHERE n.session_id = %s
            """,
            [source.pk, new.pk],
        )
        # 5. The label entries of the whole session: pi's label map.
        cursor.execute(
            f"SELECT line FROM {ENTRY} WHERE session_id = %s AND type = 'label' ORDER BY seq",
            [source.pk],
        )
        label_entries = [json.loads(line) for (line,) in cursor.fetchall()]
    pk_of = {pi_id: pk for pk, pi_id, _ in rows}
    leaf_pk = rows[-1][0] if rows else None
    index = SessionTree(label_entries)
    labels = [(t, lab) for t, lab in index.labels.items() if t in pk_of]
    if labels:
        taken = set(pk_of)
        parent = rows[-1][1]
        now = sessions.now_iso()
        with EntryWriter(new) as writer:
            for seq, (target, label) in enumerate(labels, start=len(rows)):
                label_id = generate_entry_id(taken)
                taken.add(label_id)
                entry = {
                    "type": "label",
                    "id": label_id,
                    "parentId": parent,
                    "timestamp": index.get_label_timestamp(target) or now,
                    "targetId": target,
                    "label": label,
                }
                pk = writer.new_pk()
                writer.add(
                    pk=pk,
                    pi_id=label_id,
                    parent_pk=pk_of[parent] if parent else None,
                    parent_pi_id=parent,
                    seq=seq,
                    line=serialize_entry(entry),
                    columns=entry_row_columns(entry),
                )
                pk_of[label_id] = pk
                parent = label_id
                leaf_pk = pk
    # 6. Usage: the copies count in the fork's own total (copied), not again in totals
    # over sessions (selectors/usage.py).
    usage.recount(new)
    return pk_of, leaf_pk


def _index_copies(source: Session, new: Session) -> None:
    """The fork's search rows are the source's, copied: when the source's own are not
    all written yet (its import's search job has not run), index the fork too."""
    if index_pending(source.pk):
        index_new_entries(new.pk, 0, new.entry_count)


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
            new = _new_session(source, actor, target_pi_id, _first_message(target_pk))
            pk_of, leaf_pk = _copy_path(source, new, target_pk)
        else:
            new, pk_of, leaf_pk = _fork_in_python(source, actor, target_pi_id, target_pk, scope)
        changes.copy_snapshots(source, new, pk_of)
        new.leaf_id = leaf_pk
        new.next_seq = len(pk_of)
        new.entry_count = len(pk_of)
        new.save()
        if scope == "path":
            _index_copies(source, new)
        else:
            index_new_entries(new.pk, 0, len(pk_of))
        workspace_choice.copy_choices(source, new, pk_of.keys(), only_by=actor.pk)
        details = {"target": target_pi_id, "scope": scope, "entries": len(pk_of)}
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
    structure = _structure(source)
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
