"""Full-text search: the index (the query side is `selectors/search.py`).

Each entry with text to search has one `SearchDocument` row; PostgreSQL keeps its
tsvector in a generated column, SQLite's FTS5 table follows it through triggers (both made
by migration 0002_search_indexes).

Index maintenance is explicit, never a Django signal: an appended entry is indexed in its
writer's transaction by this module's subscriber to the entry-written event
(`index_written`); the bulk writers (the follower's `importer.append_lines`, a fork) call
`jobs.search_index.index_new_entries` in their transaction, which indexes a few entries at
once and leaves more to a `search_index` job after the commit; an import's entries are
indexed by its post-import work (`importer.finish_import`, inline or as that job).
`manage.py reindex_search` rebuilds everything. This module writes the index and imports
no job: the job builds on it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection, transaction

from sessions_app.core.pi1_entries import KNOWN_ENTRY_TYPES
from sessions_app.core.preview import entry_text
from sessions_app.core.text import clean_text
from sessions_app.models import Entry, SearchDocument, Session
from sessions_app.selectors.entries import iter_entries
from sessions_app.selectors.search import entries_to_index
from sessions_app.services import entry_written

# Entry types whose text is worth searching (settings/labels/session names are not).
# Types with text to search; entry types newer than piweb are indexed too (their strings).
INDEXED_TYPES = {
    "message",
    "compaction",
    "branch_summary",
    "custom_message",
    "usage",
    "context_edit",
}
MAX_TEXT_CHARS = 200_000  # PostgreSQL's tsvector must stay under 1 MB

DOC = SearchDocument._meta.db_table
ENTRY = Entry._meta.db_table


def _parse_date(timestamp: str) -> datetime | None:
    if not timestamp:
        return None
    try:
        value = datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass(slots=True)
class EntryText:
    """What the indexer reads of an entry: bulk writers pass these instead of building
    100,000 Entry instances, which would cost more than the index itself."""

    pk: int
    session_id: int
    type: str
    timestamp: str
    role: str
    tool_name: str
    payload: dict


def document_for(entry: Entry | EntryText) -> tuple | None:
    """The search row for one entry, in DOC_COLUMNS order, or None when it has nothing
    to search."""
    if entry.type not in INDEXED_TYPES and entry.type in KNOWN_ENTRY_TYPES:
        return None
    text = clean_text(entry_text(entry.payload or {}))
    if not text.strip():
        return None
    return (
        entry.pk,
        entry.session_id,
        (entry.role or entry.type)[:32],
        entry.tool_name[:100],
        _parse_date(entry.timestamp),
        text[:MAX_TEXT_CHARS],
    )


DOC_COLUMNS = ("entry_id", "session_id", "role", "tool_name", "date", "text")


def index_entries(entries, batch_size: int = 2000) -> int:
    """Index entries in bulk (they must have primary keys). Idempotent. Returns rows written."""
    batch: list[tuple] = []
    written = 0
    for entry in entries:
        doc = document_for(entry)
        if doc is None:
            continue
        batch.append(doc)
        if len(batch) >= batch_size:
            written += _write(batch)
            batch = []
    if batch:
        written += _write(batch)
    return written


def _write(batch: list[tuple]) -> int:
    """Insert search rows, skipping entries already indexed, in one statement per batch
    (the ORM's bulk_create cost more than the database for an import's 100,000 rows)."""
    columns = ", ".join(DOC_COLUMNS)
    # One transaction per batch: outside one, SQLite would commit every row.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"INSERT INTO {DOC} ({columns}) SELECT * FROM unnest(%s::bigint[], "
                "%s::bigint[], %s::text[], %s::text[], %s::timestamptz[], %s::text[]) "
                "ON CONFLICT (entry_id) DO NOTHING",
                [list(column) for column in zip(*batch, strict=True)],
            )
        elif connection.vendor == "sqlite":
            adapt = connection.ops.adapt_datetimefield_value
            cursor.executemany(
                f"INSERT OR IGNORE INTO {DOC} ({columns}) VALUES (%s, %s, %s, %s, %s, %s)",
                [(*row[:4], adapt(row[4]), row[5]) for row in batch],
            )
        else:
            SearchDocument.objects.bulk_create(
                [SearchDocument(**dict(zip(DOC_COLUMNS, row, strict=True))) for row in batch],
                ignore_conflicts=True,
            )
    return len(batch)


def index_stored_entries(session_pk: int, from_seq: int = 0, batch_size: int = 2000) -> int:
    """Index a session's entries with seq >= from_seq, batch by batch; idempotent.

    `jobs.search_index.index_new_entries` calls this in a writer's transaction; imports, after their
    commit (inline, or in a `search_index` job): the index is derived data, so the import
    does not wait for it. Returns the number of entries read (0 for a session now gone).
    """
    last = from_seq - 1
    done = 0
    while True:
        rows = entries_to_index(session_pk, last, batch_size)
        if not rows:
            return done
        index_entries(
            EntryText(pk, sid, kind, timestamp, role, tool, json.loads(line))
            for pk, sid, _seq, kind, timestamp, role, tool, line in rows
        )
        done += len(rows)
        last = rows[-1][2]


def copy_search_rows(source_pk: int, fork_pk: int) -> int:
    """A fork's search rows, copied from its source's (its copies hold the same text):
    one INSERT ... SELECT matching the fork's copied entries to the source's by pi id;
    idempotent. Returns how many rows were written."""
    insert = "INSERT OR IGNORE INTO" if connection.vendor == "sqlite" else "INSERT INTO"
    conflict = " ON CONFLICT (entry_id) DO NOTHING" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            {insert} {DOC} (entry_id, session_id, role, tool_name, date, text)
            SELECT n.id, n.session_id, d.role, d.tool_name, d.date, d.text
            FROM {ENTRY} n
            JOIN {ENTRY} o ON o.session_id = %s AND o.pi_id = n.pi_id
            JOIN {DOC} d ON d.entry_id = o.id
            WHERE n.session_id = %s AND n.copied{conflict}
            """,
            [source_pk, fork_pk],
        )
        return cursor.rowcount


def index_session(session: Session) -> int:
    """(Re)index every entry of one session."""
    SearchDocument.objects.filter(session=session).delete()
    return index_entries(iter_entries(session))


def index_written(written: entry_written.EntryWritten) -> None:
    """Index one appended entry in its writer's transaction, so search finds it when the
    write commits (the entry-written event)."""
    index_entries([written.entry])


entry_written.subscribe(entry_written.Subscriber("search", in_transaction=index_written))
