"""Fast, batch-wise insertion of many pi entries into one session (import and fork).

Rows are written with raw SQL rather than Entry.objects.bulk_create, because at 100,000
entries the model machinery costs more than the database:
- PostgreSQL: one binary COPY stays open while rows are added, so the server stores
  rows while Python parses the next ones (two processes, two cores);
- SQLite: executemany every `batch_size` rows.
Primary keys are reserved before rows are written (`new_pk`, `reserve_ids`), so a child
can point at a parent in the same batch without a second UPDATE pass.

Callers must be inside `transaction.atomic()` and hold the session's row lock; on
SQLite the write lock is already ours (the connection begins IMMEDIATE transactions),
which is what makes reading the next id from `sqlite_sequence` safe. Use the writer
as a context manager (an exception then cancels an open COPY, so the transaction can
roll back) and call `close()` before running other queries on the connection: nothing
else can run during a COPY.
"""

from __future__ import annotations

import logging
from contextlib import ExitStack, contextmanager

from django.db import DatabaseError, connection

from sessions_app.core.text import clean_text
from sessions_app.models import Entry, Session
from sessions_app.services.usage import USAGE_COLUMNS, UsageRecorder

log = logging.getLogger(__name__)

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
    "pi_tokens",
    "line",
    *USAGE_COLUMNS,
)
# Ids reserved at a time by new_pk(): the block grows, so a small session reserves few
# and a big one seldom stops its COPY to reserve more (unused ids only leave gaps).
_FIRST_ID_BLOCK = 256
_MAX_ID_BLOCK = 65536


def _field_name(column: str) -> str:
    return next(f.name for f in Entry._meta.concrete_fields if f.column == column)


def _copy_type(field) -> str:
    """The PostgreSQL type name psycopg dumps a column's values as in a binary COPY."""
    base = field.db_type(connection).split("(")[0].strip()
    names = {
        "bigint": "int8",
        "integer": "int4",
        "varchar": "text",
        "double precision": "float8",
        "boolean": "bool",
    }
    return names.get(base, base)


class EntryWriter:
    """Writes entry rows for one session in batches (see the module doc)."""

    def __init__(
        self,
        session: Session,
        *,
        batch_size: int = 2000,
        defer_usage: bool = False,
    ):
        self.session = session
        # defer_usage: close() leaves the usage of each session to the caller
        # (`recorded`, see next_session), to write it for many sessions at once.
        self.defer_usage = defer_usage
        self.recorded: list[tuple[Session, UsageRecorder]] = []
        self.batch_size = batch_size
        self.table = Entry._meta.db_table
        self.rows: list[list] = []
        self.written = 0
        self.usage = UsageRecorder()
        extra = [
            (f, f.column)
            for f in Entry._meta.concrete_fields
            if f.column is not None and f.column not in _KNOWN_COLUMNS and not f.primary_key
        ]
        # Fields other areas may add later: written with their defaults.
        self.extra_values = [
            f.get_db_prep_save(f.get_default(), connection) if f.has_default() else None
            for f, _ in extra
        ]
        self.columns: list[str] = list(_KNOWN_COLUMNS) + [column for _, column in extra]
        self._sequence: str | None = None
        self._sqlite_last_id = 0
        self._id_pool: list[int] = []
        self._id_block = _FIRST_ID_BLOCK
        self._copy = None
        self._copy_stack: ExitStack | None = None

    # -- ids -------------------------------------------------------------------------

    def new_pk(self) -> int:
        """A fresh primary key for the next row."""
        if not self._id_pool:
            self._id_pool = self.reserve_ids(self._id_block)
            self._id_pool.reverse()
            self._id_block = min(self._id_block * 4, _MAX_ID_BLOCK)
        return self._id_pool.pop()

    def reserve_ids(self, count: int) -> list[int]:
        """`count` fresh primary keys for rows we are about to insert."""
        self._end_copy()
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                if self._sequence is None:
                    # Looked up once: per row, the lookup costs more than nextval itself.
                    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [self.table])
                    self._sequence = cursor.fetchone()[0]
                cursor.execute(
                    "SELECT nextval(%s::regclass) FROM generate_series(1, %s)",
                    [self._sequence, count],
                )
                return [row[0] for row in cursor.fetchall()]
            if connection.vendor == "sqlite":
                cursor.execute(
                    "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = %s), 0),"
                    f" COALESCE((SELECT MAX(id) FROM {self.table}), 0))",
                    [self.table],
                )
                # Written rows raise sqlite_sequence; until then we remember our range.
                start = max(cursor.fetchone()[0] or 0, self._sqlite_last_id) + 1
                self._sqlite_last_id = start + count - 1
                return list(range(start, start + count))
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
        line: str,
        columns: tuple[str, str, str, str, str, int, int],
        label: str = "",
        usage: tuple | None = None,
        copied: bool = False,
    ) -> None:
        """Queue one row; written when the batch is full (and by close()). `columns` is
        `entry_row_columns(payload)`, `usage` is `core.usage.usage_with_day(payload)`;
        `copied` marks an entry a fork copied from its source session. The writer does
        not index search: its caller does (`jobs.search_index.index_new_entries`)."""
        etype, stamp, role, tool, preview, tokens, pi_tokens = columns
        self.usage.add(seq, stamp, usage, copied)
        counted = usage[0] if usage is not None else None
        self.rows.append(
            [
                pk,
                self.session.pk,
                pi_id,
                parent_pk,
                parent_pi_id,
                seq,
                etype,
                stamp,
                role,
                tool,
                preview,
                clean_text(label)[:200] if label else "",
                tokens,
                pi_tokens,
                line,
                counted.key if counted else "",
                counted.input if counted else 0,
                counted.output if counted else 0,
                counted.cache_read if counted else 0,
                counted.cache_write if counted else 0,
                counted.cost if counted else 0.0,
                copied,
                *self.extra_values,
            ]
        )
        if len(self.rows) >= self.batch_size:
            self.flush()

    def flush(self) -> int:
        """Send the queued rows to the database; returns how many."""
        rows, self.rows = self.rows, []
        if not rows:
            return 0
        if connection.vendor == "postgresql":
            copy = self._open_copy()
            for row in rows:
                copy.write_row(row)
        else:
            column_sql = ", ".join(connection.ops.quote_name(c) for c in self.columns)
            marks = ", ".join(["%s"] * len(self.columns))
            with connection.cursor() as cursor:
                cursor.executemany(
                    f"INSERT INTO {self.table} ({column_sql}) VALUES ({marks})", rows
                )
        self.written += len(rows)
        return len(rows)

    def next_session(self, session: Session) -> None:
        """Go on with the rows of another session (new sessions imported together share
        one writer, so one COPY). Only with `defer_usage`: the usage recorded so far is
        kept in `recorded` for the caller."""
        assert self.defer_usage
        self.recorded.append((self.session, self.usage))
        self.session, self.usage = session, UsageRecorder()

    def close(self) -> int:
        """Write everything queued and end the COPY, then the usage the rows add; returns
        the rows written in all."""
        self.flush()
        self._end_copy()
        if not self.defer_usage:
            self.usage.apply(self.session)
        elif not self.recorded or self.recorded[-1][1] is not self.usage:
            self.recorded.append((self.session, self.usage))
        return self.written

    def __enter__(self) -> EntryWriter:
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.close()
        elif self._copy_stack is not None:
            stack, self._copy_stack, self._copy = self._copy_stack, None, None
            stack.__exit__(exc_type, exc, traceback)  # psycopg cancels the COPY

    def _open_copy(self):
        if self._copy is None:
            column_sql = ", ".join(connection.ops.quote_name(c) for c in self.columns)
            self._copy_stack = ExitStack()
            cursor = self._copy_stack.enter_context(connection.cursor()).cursor
            self._copy = self._copy_stack.enter_context(
                cursor.copy(f"COPY {self.table} ({column_sql}) FROM STDIN (FORMAT BINARY)")
            )
            # Binary rows: nothing to escape on either side.
            self._copy.set_types(
                [_copy_type(Entry._meta.get_field(_field_name(c))) for c in self.columns]
            )
        return self._copy

    def _end_copy(self) -> None:
        if self._copy_stack is not None:
            stack, self._copy_stack, self._copy = self._copy_stack, None, None
            stack.close()


def set_parents(pairs: list[tuple[int, int]]) -> None:
    """UPDATE parent_id for (entry pk, parent pk) pairs (forward references)."""
    _update_entries("SET parent_id = %s WHERE id = %s", [(parent, pk) for pk, parent in pairs])


def apply_labels(session: Session, labels: dict[str, str]) -> None:
    """Set the denormalized `label` column for targets (pi: latest label entry wins)."""
    _update_entries(
        "SET label = %s WHERE session_id = %s AND pi_id = %s",
        [(clean_text(label)[:200], session.pk, target) for target, label in labels.items()],
    )


def _update_entries(assignment: str, rows: list[tuple]) -> None:
    """`UPDATE <entries> SET ... WHERE ...` (`assignment`) run once per row of values."""
    if not rows:
        return
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {Entry._meta.db_table} {assignment}", rows)


@contextmanager
def deferred_wal_checkpoint():
    """On SQLite, commits made inside skip the automatic checkpoint. After a big import,
    that checkpoint copies every page the import wrote from the write-ahead log into the
    database file before the commit returns: a tenth of the import's time, for nothing
    the import needs. The data is durable in the log; `finish_import` checkpoints."""
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        pages = cursor.fetchone()[0]
        cursor.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")


def tidy_entries() -> None:
    """VACUUM the entries table (PostgreSQL) or checkpoint the write-ahead log (SQLite)
    after an import's commit; nothing inside a transaction, where neither can run."""
    if connection.in_atomic_block:
        return
    try:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(f"VACUUM (SKIP_LOCKED) {Entry._meta.db_table}")
            elif connection.vendor == "sqlite":
                cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except DatabaseError as exc:  # not the table's owner, say: autovacuum will do it
        log.warning("could not tidy the entries table after an import: %s", exc)
