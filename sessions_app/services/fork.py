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
"""

from __future__ import annotations

import json
import uuid

from django.db import connection, transaction

from sessions_app.core.errors import ServiceError
from sessions_app.core.jsonl import serialize_entry
from sessions_app.core.preview import entry_preview, entry_row_columns
from sessions_app.core.text import clean_text
from sessions_app.core.tree import SessionTree, TreeError, generate_entry_id
from sessions_app.core.usage import usage_with_day
from sessions_app.models import Entry, Session
from sessions_app.selectors import workspaces
from sessions_app.selectors.entries import entry_pk
from sessions_app.services import changes, events, sessions, workspace_choice
from sessions_app.services.bulk_entries import EntryWriter, apply_labels
from sessions_app.services.jobs.search_index import index_new_entries

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
    """(header, entries, leaf id) for the new session, as plain pi dicts."""
    selected = _select(structure, target_pk, scope)
    # Every label entry of the session counts: pi's label map is session-wide.
    wanted = [pk for pk, _, _, etype in structure if pk in selected or etype == "label"]
    loaded = _load(wanted)
    ordered = [loaded[pk][0] for pk in wanted]
    index = SessionTree(ordered, leaf_id=target_pi_id)
    now = sessions.now_iso()
    new_id = str(uuid.uuid4())
    if scope == "path":
        result = index.create_branched_session(
            target_pi_id, cwd=source.cwd, parent_session=source.pi_id, session_id=new_id, now=now
        )
        return result["header"], result["entries"], result["leafId"], loaded, wanted
    # The LibreChat scopes: the kept entries in append order, labels re-created after T.
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


def fork_session(session: Session, target_pi_id: str, scope: str = "path", actor=None) -> Session:
    """A new session holding the chosen part of `session` up to entry `target_pi_id`."""
    if scope not in SCOPES:
        raise ForkError(f"Unknown fork scope {scope!r}; choose one of {', '.join(SCOPES)}.")
    with transaction.atomic():
        source = sessions.lock_session(session.pk)
        target_pk = entry_pk(source, target_pi_id)
        if target_pk is None:
            raise ForkError(f"No entry {target_pi_id!r} in session {source.pi_id}.")
        structure = _structure(source)
        try:
            header, entries, leaf_id, loaded, _ = _fork_entries(
                source, structure, target_pi_id, target_pk, scope
            )
        except TreeError as exc:
            raise ForkError(f"Cannot fork at {target_pi_id}: {exc}") from exc
        # Lines of copied entries are reused as they are (same content, same text).
        line_of = {id(payload): line for payload, line in loaded.values()}
        # A fork gets its own title: not its source's name (a copied session_info), but
        # the last user message it copies, where it leaves the source (a rename later
        # writes a session_info of its own).
        name = ""
        first_message = ""
        for entry in entries:
            if (
                entry.get("type") == "message"
                and (entry.get("message") or {}).get("role") == "user"
            ):
                first_message = entry_preview(entry)
        # The fork starts where the source works at the fork point (its workspace choice).
        fork_cwd = workspaces.session_workspace(source, target_pi_id).cwd or source.cwd
        new = Session.objects.create(
            pi_id=header["id"],
            version=header["version"],
            cwd=fork_cwd,
            header_timestamp=header["timestamp"],
            parent_session_ref=source.pi_id,
            parent=source,
            name=clean_text(name)[:500],
            owner=actor,
            source=Session.Source.FORK,
            first_message=clean_text(first_message)[:300],
            model_profile=source.model_profile,
        )
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
        changes.copy_snapshots(source, new, pk_of)
        new.leaf_id = pk_of.get(leaf_id)
        new.next_seq = len(entries)
        new.entry_count = len(entries)
        new.save()
        index_new_entries(new.pk, 0, len(entries))
        workspace_choice.copy_choices(source, new, pk_of.keys(), only_by=actor.pk)
        details = {"target": target_pi_id, "scope": scope, "entries": len(entries)}
        sessions.record_activity(source, actor, "forked", to=new.pi_id, **details)
        sessions.record_activity(new, actor, "forked_from", source=source.pi_id, **details)
        events.publish_sessions_changed([new.pk])
    return new
