"""Reads of a session's tree: the payloads on a path root→leaf, the context path, the
path's primary keys (one recursive query, or a cached parent map for large sessions).

`UNSET` means "the session's leaf" wherever a leaf may be given.
"""

import json
import threading
from collections import OrderedDict

from django.db import connection

from sessions_app.core.messages import context_from_path
from sessions_app.models import CONTEXT_MARKER_TYPES, Entry, Session

UNSET = object()
MAX_PATH_DEPTH = 10_000_000


def path_entry_pks(leaf_pk: int) -> list[int]:
    """Primary keys root→leaf in one recursive query."""
    return [row[0] for row in _path_query(leaf_pk, "path.id")]


def path_pks(session: Session, leaf_pk: int) -> list[int]:
    """Primary keys root→leaf, the cheaper way for the session's size."""
    return _walk_pks(session, leaf_pk) if _large(session) else path_entry_pks(leaf_pk)


def _path_query(leaf_pk: int, columns: str) -> list[tuple]:
    """Run one recursive query from the leaf up; `columns` (over `path` and the entry
    row `e`) come back root first."""
    table = Entry._meta.db_table
    sql = f"""
        WITH RECURSIVE path(id, parent_id, depth) AS (
            SELECT id, parent_id, 0 FROM {table} WHERE id = %s
            UNION ALL
            SELECT e.id, e.parent_id, p.depth + 1
            FROM {table} e JOIN path p ON e.id = p.parent_id
            WHERE p.depth < %s
        )
        SELECT {columns} FROM path JOIN {table} e ON e.id = path.id ORDER BY path.depth DESC
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [leaf_pk, MAX_PATH_DEPTH])
        return cursor.fetchall()


def load_path(session: Session, leaf_pi_id=UNSET) -> list[dict]:
    """The pi payloads on the path root→leaf (default: the session's leaf).

    One recursive query for ordinary sessions, reading each entry's `line` and decoding
    them all with one json.loads. Sessions with more than PATH_WALK_MIN entries walk the parent
    links in Python over (id, parent_id) pairs instead: a 100,000-deep recursive query
    costs seconds, the walk milliseconds.
    """
    if leaf_pi_id is UNSET:
        leaf_pk = session.leaf_id
    elif leaf_pi_id is None:
        leaf_pk = None
    else:
        leaf_pk = Entry.objects.values_list("pk", flat=True).get(session=session, pi_id=leaf_pi_id)
    if leaf_pk is None:
        return []
    if _large(session):
        return _payload_list(_walk_pks(session, leaf_pk))
    return _decode_lines([row[0] for row in _path_query(leaf_pk, "e.line")])


def load_path_estimates(session: Session, leaf_pi_id: str) -> tuple[list[dict], list]:
    """`load_path` to an entry, with each entry's stored `pi_tokens` (None where a row
    predates the column): what `prepare_compaction(..., estimates=)` sums."""
    leaf_pk = Entry.objects.values_list("pk", flat=True).get(session=session, pi_id=leaf_pi_id)
    if _large(session):
        pks = _walk_pks(session, leaf_pk)
        found = {row[0]: row[1:] for row in _rows_by_pk(pks, "line, pi_tokens")}
        rows = [found[pk] for pk in pks]
    else:
        rows = _path_query(leaf_pk, "e.line, e.pi_tokens")
    return _decode_lines([row[0] for row in rows]), [row[1] for row in rows]


PATH_WALK_MIN = 5000


def _large(session: Session) -> bool:
    return session.entry_count > PATH_WALK_MIN


# Parent links of big sessions, per process: entries are append-only and never change
# parent once committed, and a session's writers are serialized by its row lock, so new
# rows always have higher ids; each load fetches only the rows added since the last one.
_PARENT_CACHE: OrderedDict[tuple, tuple[int, dict[int, int | None]]] = OrderedDict()
_PARENT_CACHE_SESSIONS = 8
_parent_cache_lock = threading.Lock()


def _parent_map(session: Session) -> dict[int, int | None]:
    key = (session.pk, session.pi_id, session.created_at)
    with _parent_cache_lock:
        cached = _PARENT_CACHE.get(key)
    since, known = cached if cached else (0, {})
    table = Entry._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, parent_id FROM {table} WHERE session_id = %s AND id > %s",
            [session.pk, since],
        )
        rows = cursor.fetchall()
    if rows:
        known = {**known, **dict(rows)} if known else dict(rows)
        since = max(since, max(row[0] for row in rows))
    if connection.in_atomic_block:
        return known  # may hold uncommitted rows: not for other transactions' eyes
    with _parent_cache_lock:
        _PARENT_CACHE[key] = (since, known)
        _PARENT_CACHE.move_to_end(key)
        while len(_PARENT_CACHE) > _PARENT_CACHE_SESSIONS:
            _PARENT_CACHE.popitem(last=False)
    return known


def _walk_pks(session: Session, leaf_pk: int) -> list[int]:
    """Primary keys root→leaf, walking (id, parent_id) pairs in Python."""
    parent_of = _parent_map(session)
    path: list[int] = []
    current = leaf_pk if leaf_pk in parent_of else None
    while current is not None and len(path) <= len(parent_of):
        path.append(current)
        current = parent_of.get(current)
    path.reverse()
    return path


def _rows_of(session: Session, where: str, params: list) -> list[tuple]:
    table = Entry._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, pi_id, type, role FROM {table} WHERE session_id = %s AND {where}",
            [session.pk, *params],
        )
        return cursor.fetchall()


def _large_context_path(session: Session, leaf_pk: int) -> list[dict]:
    """load_context_path for big sessions: only ids travel until the needed rows are known."""
    pks = _walk_pks(session, leaf_pk)
    position = {pk: i for i, pk in enumerate(pks)}
    marker_types = ", ".join(f"'{kind}'" for kind in CONTEXT_MARKER_TYPES)
    specials = _rows_of(session, f"type IN ({marker_types})", [])
    on_path = sorted((position[row[0]], row) for row in specials if row[0] in position)
    compactions = [item for item in on_path if item[1][2] == "compaction"]
    if not compactions:
        return _payload_list(pks)
    compaction_index, compaction_row = compactions[-1]
    first_kept = _payloads([compaction_row[0]])[compaction_row[0]].get("firstKeptEntryId")
    start = compaction_index
    if isinstance(first_kept, str):
        kept = _rows_of(session, "pi_id = %s", [first_kept])
        if kept and kept[0][0] in position and position[kept[0][0]] < compaction_index:
            start = position[kept[0][0]]
    wanted = set(range(start, len(pks)))
    wanted.update(_settings_positions(session, pks, position, on_path, start))
    order = sorted(wanted)
    return _payload_list([pks[i] for i in order])


def _settings_positions(
    session: Session, pks: list[int], position: dict, on_path: list, start: int
) -> list[int]:
    """Positions (before `start`) of the entries that set the thinking level and the model
    there: the last thinking_level_change, and the last model_change or assistant message.
    `on_path`: the (position, row) marker rows on the path, in path order."""
    wanted = []
    thinking = [i for i, row in on_path if row[2] == "thinking_level_change" and i < start]
    if thinking:
        wanted.append(thinking[-1])
    # The model: the last model_change or assistant message before `start`.
    model_changes = [i for i, row in on_path if row[2] == "model_change" and i < start]
    floor = model_changes[-1] if model_changes else -1
    step, end = 64, start
    while end > floor + 1:
        begin = max(floor + 1, end - step)
        chunk = pks[begin:end]
        marks = ", ".join(["%s"] * len(chunk))
        found = _rows_of(session, f"role = 'assistant' AND id IN ({marks})", chunk)
        if found:
            floor = max(position[row[0]] for row in found)
            break
        end, step = begin, step * 4
    if floor >= 0:
        wanted.append(floor)
    return sorted(wanted)


def load_settings_path(session: Session, leaf_pi_id=UNSET) -> list[dict]:
    """The entries of the path root→leaf that set the model and the thinking level at the
    leaf (at most two: the last thinking_level_change, and the last model_change or
    assistant message), in path order. `context_from_path` of them gives the leaf's
    "model" and "thinkingLevel" without reading the rest of the path's payloads."""
    if leaf_pi_id is UNSET:
        leaf_pk = session.leaf_id
    elif leaf_pi_id is None:
        return []
    else:
        leaf_pk = Entry.objects.values_list("pk", flat=True).get(session=session, pi_id=leaf_pi_id)
    if leaf_pk is None:
        return []
    if _large(session):
        pks = _walk_pks(session, leaf_pk)
        position = {pk: i for i, pk in enumerate(pks)}
        marker_types = ", ".join(f"'{kind}'" for kind in CONTEXT_MARKER_TYPES)
        specials = _rows_of(session, f"type IN ({marker_types})", [])
        on_path = sorted((position[row[0]], row) for row in specials if row[0] in position)
        wanted = _settings_positions(session, pks, position, on_path, len(pks))
        return _payload_list([pks[i] for i in wanted])
    rows = _path_rows(leaf_pk)
    wanted = []
    for kinds in (("thinking_level_change",), ("model_change", "assistant")):
        for i in range(len(rows) - 1, -1, -1):
            if rows[i][2] in kinds or (rows[i][2] == "message" and rows[i][3] in kinds):
                wanted.append(i)
                break
    wanted.sort()
    payloads = _payloads([rows[i][0] for i in wanted])
    return [payloads[rows[i][0]] for i in wanted]


def _payload_list(pks: list[int]) -> list[dict]:
    """Payloads of the given entries, in the given order."""
    found = dict(_rows_by_pk(pks, "line"))
    return _decode_lines([found[pk] for pk in pks])


def _rows_by_pk(pks: list[int], columns: str) -> list[tuple]:
    """(id, `columns`…) rows of the given entries, in no particular order."""
    table = Entry._meta.db_table
    rows: list[tuple] = []
    select = f"SELECT id, {columns} FROM {table} "
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # One array parameter: no 100,000-placeholder statement to build and parse.
            cursor.execute(select + "WHERE id = ANY(%s)", [list(pks)])
            rows.extend(cursor.fetchall())
        else:
            for start in range(0, len(pks), 10000):
                chunk = pks[start : start + 10000]
                marks = ", ".join(["%s"] * len(chunk))
                cursor.execute(select + f"WHERE id IN ({marks})", chunk)
                rows.extend(cursor.fetchall())
    return rows


def _decode_lines(lines: list[str]) -> list[dict]:
    """Entries from their stored lines: one C-level parse of the whole list is faster
    than one json.loads call per entry."""
    return json.loads("[" + ",".join(lines) + "]")


def _path_rows(leaf_pk: int) -> list[tuple]:
    """(pk, pi id, type, role) root→leaf, without payloads, in one recursive query."""
    return _path_query(leaf_pk, "e.id, e.pi_id, e.type, e.role")


def _payloads(pks: list[int]) -> dict[int, dict]:
    return dict(zip(pks, _payload_list(pks), strict=True))


def load_context_path(session: Session, leaf_pi_id=UNSET) -> list[dict]:
    """The entries of the path root→leaf that can change the model's context at the leaf.

    With a compaction on the path only the last compaction, the entries from its
    firstKeptEntryId on, and the last thinking-level / model-setting entries before them
    matter; their payloads are all that is read, so a 100,000-entry path that was
    compacted loads in milliseconds. Without a compaction this is `load_path`. The
    result is in path order but may have gaps: give it to `load_context`'s
    `context_from_path`, not to build_session_context (which walks parentIds).
    """
    if leaf_pi_id is UNSET:
        leaf_pk = session.leaf_id
    elif leaf_pi_id is None:
        return []
    else:
        leaf_pk = Entry.objects.values_list("pk", flat=True).get(session=session, pi_id=leaf_pi_id)
    if leaf_pk is None:
        return []
    if _large(session):
        return _large_context_path(session, leaf_pk)
    rows = _path_rows(leaf_pk)
    last_compaction = next(
        (i for i in range(len(rows) - 1, -1, -1) if rows[i][2] == "compaction"), None
    )
    if last_compaction is None:
        return load_path(session, rows[-1][1])
    compaction = _payloads([rows[last_compaction][0]])[rows[last_compaction][0]]
    first_kept = compaction.get("firstKeptEntryId")
    start = last_compaction
    for i in range(last_compaction):
        if rows[i][1] == first_kept:
            start = i
            break
    wanted = list(range(start, len(rows)))
    earlier = []
    for kinds in (("thinking_level_change",), ("model_change", "assistant")):
        for i in range(start - 1, -1, -1):
            if rows[i][2] in kinds or (rows[i][2] == "message" and rows[i][3] in kinds):
                earlier.append(i)
                break
    wanted = sorted(earlier) + wanted
    payloads = _payloads([rows[i][0] for i in wanted])
    return [payloads[rows[i][0]] for i in wanted]


def load_context(session: Session, leaf_pi_id=UNSET) -> dict:
    """What the model sees at the leaf (pi's buildSessionContext), read from the database
    as little as possible (see load_context_path)."""
    return context_from_path(load_context_path(session, leaf_pi_id))


def load_path_tail(
    session: Session, limit: int, before: str | None = None
) -> tuple[int, list[dict]]:
    """The last `limit` payloads of the path root→leaf, and how many come before them.
    `before` (an entry's pi id): the last `limit` before that entry of the path instead
    (none if it is not on the path).

    Only ids are walked for the whole path; payloads are read for the tail alone, so a
    page showing the recent conversation of a huge session stays cheap.
    """
    if session.leaf_id is None:
        return 0, []
    pks = (
        _walk_pks(session, session.leaf_id) if _large(session) else path_entry_pks(session.leaf_id)
    )
    if before is not None:
        pk = Entry.objects.filter(session=session, pi_id=before).values_list("pk", flat=True)
        found = pk.first()
        pks = pks[: pks.index(found)] if found in pks else []
    hidden = max(0, len(pks) - limit)
    return hidden, _payload_list(pks[hidden:])


def load_all_entries(session: Session) -> list[dict]:
    """Every payload of the session in append order (what pi's getEntries() returns)."""
    table = Entry._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT line FROM {table} WHERE session_id = %s ORDER BY seq", [session.pk])
        return _decode_lines([row[0] for row in cursor.fetchall()])


# What the context gauge needs of each entry on the path, without its payload: the
# columns, and two flags computed in SQL from the stored line (JSON.stringify's form, so
# a key is spelt out as written): whether the entry may restart the context chart's
# running figure (a compaction, or an assistant message that has a "usage" key), and
# whether it may set the model (a model_change, or an assistant message naming one).
# A flag may be true for an entry that turns out not to (its payload then says so); it
# is never false for one that does.
_GAUGE_COLUMNS = """
    e.pi_id, e.type, e.role, e.pi_tokens,
    CASE WHEN e.type = 'compaction' OR (e.type = 'message' AND e.role = 'assistant'
        AND e.line LIKE '%%"usage"%%') THEN 1 ELSE 0 END,
    CASE WHEN e.type = 'model_change' OR (e.type = 'message' AND e.role = 'assistant'
        AND (e.line LIKE '%%"model"%%' OR e.line LIKE '%%"responseModel"%%'))
        THEN 1 ELSE 0 END
"""


def load_path_gauge_rows(session: Session) -> list[tuple]:
    """(pk, pi id, type, role, pi_tokens, may restart the context, may set the model)
    of every entry root→leaf (see _GAUGE_COLUMNS); no payload is read or decoded."""
    if session.leaf_id is None:
        return []
    if not _large(session):
        return _path_query(session.leaf_id, "e.id, " + _GAUGE_COLUMNS)
    pks = _walk_pks(session, session.leaf_id)
    table = Entry._meta.db_table
    select = f"SELECT e.id, {_GAUGE_COLUMNS} FROM {table} e "
    found: dict[int, tuple] = {}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(select + "WHERE e.id = ANY(%s)", [list(pks)])
            found.update((row[0], row) for row in cursor.fetchall())
        else:
            for start in range(0, len(pks), 10000):
                chunk = pks[start : start + 10000]
                marks = ", ".join(["%s"] * len(chunk))
                cursor.execute(select + f"WHERE e.id IN ({marks})", chunk)
                found.update((row[0], row) for row in cursor.fetchall())
    return [found[pk] for pk in pks]


def load_payloads(pks: list[int]) -> dict[int, dict]:
    """The payloads of the given entries, by primary key."""
    return _payloads(list(pks)) if pks else {}
