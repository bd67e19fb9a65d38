"""Fast, batch-wise insertion of many pi entries into one session (import and fork).

Rows are written with raw SQL (COPY on PostgreSQL, executemany on SQLite) rather than
Entry.objects.bulk_create, because at 100,000 entries the model machinery (and the
second JSON encoding JSONField does) costs more than the database. Primary keys are
reserved before the batch is written, so a child can point at a parent in the same
batch without a second UPDATE pass.

Callers must be inside `transaction.atomic()` and hold the session's row lock; on
SQLite the write lock is already ours (the connection begins IMMEDIATE transactions),
which is what makes reading the next id from `sqlite_sequence` safe.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

from django.db import connection

from sessions_app.models import Entry, Session
from sessions_app.services.tree import entry_columns

# Characters PostgreSQL text/jsonb refuse and Python cannot encode to UTF-8.
_BAD_TEXT_RE = re.compile("[\x00\ud800-\udfff]")
# JSON escapes jsonb refuses: \u0000 and (possibly lone) surrogates.
_BAD_JSON_ESCAPE_RE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")

_KNOWN_COLUMNS = (
    "id",
    "session_id",
    "pi_id",
    "parent_id",
    "parent_pi_id",
    "seq",
    "type",
    "timestamp",
    "role",
    "tool_name",
    "preview",
    "label",
    "token_count",
    "payload",
    "line",
)


def clean_text(value: str) -> str:
    """A string any database column accepts: NUL and lone surrogates become U+FFFD."""
    if value.isascii():
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    return _BAD_TEXT_RE.sub("\ufffd", value)


def _clean_value(value):
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k): _clean_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_value(v) for v in value]
    return value


def payload_text_for_db(line: str, payload: dict) -> str:
    """The text stored in the `payload` column for an entry whose exact JSON is `line`.

    Usually `line` itself. jsonb cannot hold \\u0000 or lone surrogates: then the
    payload column gets a cleaned copy (those characters as U+FFFD) while `line` keeps
    the exact text, which is what load_path and export read.
    """
    if connection.vendor == "postgresql" and "\\u" in line and _BAD_JSON_ESCAPE_RE.search(line):
        cleaned = _clean_value(payload)
        return json.dumps(cleaned, ensure_ascii=False, separators=(",", ":"))
    return line


class EntryWriter:
    """Buffers entry rows for one session and writes them in batches."""

    def __init__(self, session: Session, *, batch_size: int = 2000, index_search: bool = True):
        self.session = session
        self.index_search = index_search
        self.batch_size = batch_size
        self.table = Entry._meta.db_table
        self.rows: list[list] = []
        self.payloads: list[dict] = []
        self.written = 0
        extra = [
            f
            for f in Entry._meta.concrete_fields
            if f.column not in _KNOWN_COLUMNS and not f.primary_key
        ]
        # Fields other areas may add later: written with their defaults.
        self.extra_columns = [f.column for f in extra]
        self.extra_values = [
            f.get_db_prep_save(f.get_default(), connection) if f.has_default() else None
            for f in extra
        ]
        self.columns = list(_KNOWN_COLUMNS) + self.extra_columns
        self._next_ids: list[int] = []

    # -- ids -------------------------------------------------------------------------

    def reserve_ids(self, count: int) -> list[int]:
        """`count` fresh primary keys for rows we are about to insert."""
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(
                    "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                    [self.table, count],
                )
                return [row[0] for row in cursor.fetchall()]
            if connection.vendor == "sqlite":
                cursor.execute(
                    "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = %s), 0),"
                    f" COALESCE((SELECT MAX(id) FROM {self.table}), 0))",
                    [self.table],
                )
                start = (cursor.fetchone()[0] or 0) + 1
                # Written rows raise sqlite_sequence; until then we remember our range.
                if self._next_ids and self._next_ids[-1] >= start:
                    start = self._next_ids[-1] + 1
                ids = list(range(start, start + count))
                self._next_ids = ids[-1:]
                return ids
        raise NotImplementedError(f"bulk entry writes are not supported on {connection.vendor}")

    # -- rows ------------------------------------------------------------------------

    def add(
        self,
        *,
        pk: int,
        pi_id: str,
        parent_pk: int | None,
        parent_pi_id: str | None,
        seq: int,
        payload: dict,
        line: str,
        label: str = "",
    ) -> None:
        cols = entry_columns(payload)
        self.payloads.append(payload)
        self.rows.append(
            [
                pk,
                self.session.pk,
                pi_id,
                parent_pk,
                parent_pi_id,
                seq,
                clean_text(cols["type"]),
                clean_text(cols["timestamp"]),
                clean_text(cols["role"]),
                clean_text(cols["tool_name"]),
                clean_text(cols["preview"]),
                clean_text(label),
                cols["token_count"],
                payload_text_for_db(line, payload),
                line,
                *self.extra_values,
            ]
        )

    def flush(self) -> int:
        """Write the buffered rows; returns how many."""
        rows, self.rows = self.rows, []
        payloads, self.payloads = self.payloads, []
        if not rows:
            return 0
        column_sql = ", ".join(connection.ops.quote_name(c) for c in self.columns)
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                raw = cursor.cursor  # the psycopg cursor under Django's wrapper
                with raw.copy(f"COPY {self.table} ({column_sql}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                marks = ", ".join(["%s"] * len(self.columns))
                cursor.executemany(
                    f"INSERT INTO {self.table} ({column_sql}) VALUES ({marks})", rows
                )
        self.written += len(rows)
        if self.index_search:
            _index_for_search(rows, payloads)
        return len(rows)


def _index_for_search(rows: list[list], payloads: list[dict]) -> None:
    """Rows written with raw SQL get no post_save: index them for search here."""
    try:
        from sessions_app.services.search import index_entries
    except ImportError:  # search not installed
        return
    # Light stand-ins for Entry (the indexer reads these attributes only): building
    # 100,000 model instances would cost more than the index itself.
    index_entries(
        SimpleNamespace(
            pk=row[0],
            id=row[0],
            session_id=row[1],
            pi_id=row[2],
            type=row[6],
            timestamp=row[7],
            role=row[8],
            tool_name=row[9],
            payload=_clean_value(payload)
            if "\\u" in row[14] and _BAD_JSON_ESCAPE_RE.search(row[14])
            else payload,
        )
        for row, payload in zip(rows, payloads, strict=True)
    )


def set_parents(pairs: list[tuple[int, int]]) -> None:
    """UPDATE parent_id for (entry pk, parent pk) pairs (forward references)."""
    if not pairs:
        return
    table = Entry._meta.db_table
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {table} SET parent_id = %s WHERE id = %s",
            [(parent, pk) for pk, parent in pairs],
        )


def apply_labels(session: Session, labels: dict[str, str]) -> None:
    """Set the denormalized `label` column for targets (pi: latest label entry wins)."""
    if not labels:
        return
    table = Entry._meta.db_table
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {table} SET label = %s WHERE session_id = %s AND pi_id = %s",
            [(clean_text(label)[:200], session.pk, target) for target, label in labels.items()],
        )


def index_stored_entries(session: Session, from_seq: int = 0, batch_size: int = 2000) -> int:
    """Index a session's entries with seq >= from_seq for search, batch by batch.

    The importer runs this after its transaction has committed: the search index is
    derived data (idempotent, rebuilt by `manage.py reindex_search`), so the import
    itself does not wait for it. Returns the number of entries read.
    """
    table = Entry._meta.db_table
    last = from_seq - 1
    done = 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, seq, pi_id, type, timestamp, role, tool_name, line, "
                f"CASE WHEN line = '' THEN payload END FROM {table} "
                f"WHERE session_id = %s AND seq > %s ORDER BY seq LIMIT %s",
                [session.pk, last, batch_size],
            )
            rows = cursor.fetchall()
        if not rows:
            return done
        field = Entry._meta.get_field("payload")
        batch_rows, payloads = [], []
        for pk, _seq, pi_id, etype, ts, role, tool, line, payload in rows:
            value = json.loads(line) if line else field.from_db_value(payload, None, connection)
            # the row layout _index_for_search reads (see EntryWriter.add)
            batch_rows.append(
                [
                    pk,
                    session.pk,
                    pi_id,
                    None,
                    None,
                    None,
                    etype,
                    ts,
                    role,
                    tool,
                    None,
                    None,
                    None,
                    None,
                    line,
                ]
            )
            payloads.append(value)
        _index_for_search(batch_rows, payloads)
        done += len(rows)
        last = rows[-1][1]
