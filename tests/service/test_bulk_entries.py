"""services/bulk_entries.py: the writer the import and the fork store entries with. Rows
keep their links, lines and columns whatever the batches and id blocks; a failure inside
it leaves nothing behind and the connection usable; forward links and labels are set
afterwards; many sessions share one writer. Runs on PostgreSQL (binary COPY) and on
SQLite (executemany), the two paths of the module."""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.db import transaction

from sessions_app.core.jsonl import serialize_entry
from sessions_app.core.preview import entry_row_columns
from sessions_app.core.usage import usage_with_day
from sessions_app.models import Entry, Session
from sessions_app.selectors import paths
from sessions_app.selectors.exporter import export_bytes
from sessions_app.services import bulk_entries
from sessions_app.services.bulk_entries import EntryWriter, apply_labels, set_parents
from sessions_app.services.importer import SessionImportError
from sessions_app.services.sessions import lock_session
from tests.support.pi_files import (
    assert_context_matches_core,
    chain,
    do_import,
    header,
    jsonl_text,
    message,
)

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


@pytest.fixture
def owner(make_user):
    return make_user("writer")


def new_session(owner, pi_id: str) -> Session:
    return Session.objects.create(
        owner=owner, pi_id=pi_id, cwd="/work/project", header_timestamp="2026-01-01T00:00:00Z"
    )


def add_all(writer: EntryWriter, entries: list[dict], pk_of: dict | None = None) -> dict:
    """Add `entries` as fork does: ids first, then rows linked to them."""
    pk_of = pk_of if pk_of is not None else {}
    for entry in entries:
        pk_of[entry["id"]] = writer.new_pk()
    for seq, entry in enumerate(entries):
        parent = entry.get("parentId")
        writer.add(
            pk=pk_of[entry["id"]],
            pi_id=entry["id"],
            parent_pk=pk_of.get(parent) if parent else None,
            parent_pi_id=parent,
            seq=seq,
            line=serialize_entry(entry),
            columns=entry_row_columns(entry),
            usage=usage_with_day(entry),
        )
    return pk_of


def with_usage(entry: dict, tokens: int) -> dict:
    entry["message"]["usage"] = {
        "input": tokens,
        "output": 1,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": tokens + 1,
        "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75},
    }
    return entry


def stored(session: Session) -> dict[str, Entry]:
    return {e.pi_id: e for e in Entry.objects.filter(session=session).select_related("parent")}


# --- moved from test_importer.py ------------------------------------------------------------


def test_id_blocks_run_out_mid_file_and_links_stay_right(owner, monkeypatch):
    """Primary keys are reserved a block at a time (on PostgreSQL each new block ends the
    running COPY): tiny blocks make a 40-entry file cross many of them."""
    monkeypatch.setattr(bulk_entries, "_FIRST_ID_BLOCK", 1)
    monkeypatch.setattr(bulk_entries, "_MAX_ID_BLOCK", 3)
    entries = chain(40)
    entries.insert(5, entries.pop(20))  # a forward reference across blocks
    report = do_import(jsonl_text(header(), entries), owner, batch_size=4)
    assert report.entries_added == 40 and not report.warnings
    stored = {e.pi_id: e for e in Entry.objects.filter(session=report.session)}
    assert len({e.pk for e in stored.values()}) == 40
    for e in entries:
        parent = stored[e["id"]].parent
        assert (parent.pi_id if parent else None) == e["parentId"]
    assert export_bytes(report.session) == jsonl_text(header(), entries).encode()
    assert_context_matches_core(report.session, entries, [entries[-1]["id"]])


@pytest.mark.skipif(
    "sqlite" not in settings.DATABASES["default"]["ENGINE"], reason="SQLite's write-ahead log"
)
@pytest.mark.django_db(transaction=True)
def test_on_sqlite_the_import_commits_to_the_log_and_finish_import_checkpoints(owner):
    """The import's commit leaves its pages in the write-ahead log (the checkpoint that
    would copy them into the database file is finish_import's job), and the connection's
    automatic checkpoints come back afterwards, after a failed import too."""
    from django.db import connection

    from sessions_app.services.importer import finish_import

    def autocheckpoint() -> int:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_autocheckpoint")
            return cursor.fetchone()[0]

    database_file = connection.settings_dict["NAME"]
    # Earlier tests leave free pages in the file; without them, what the checkpoint copies
    # must grow the file.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM")
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # VACUUM's pages into the file
    pages_before = autocheckpoint()
    assert pages_before > 0
    entries = chain(6000)
    for entry in entries:
        entry["message"]["content"] = "w" * 1000  # 6 MB: more than 1000 pages of log
    size_before = os.path.getsize(database_file)
    report = do_import(jsonl_text(header(), entries), owner, after_commit="off")
    assert report.entries_added == 6000 and autocheckpoint() == pages_before
    assert os.path.getsize(database_file) - size_before < 1_000_000
    with pytest.raises(SessionImportError, match="duplicate entry id"):
        do_import(jsonl_text(header("s-dup"), [*chain(2), chain(1)[0]]), owner)
    assert autocheckpoint() == pages_before
    finish_import(report.session.pk, 0)
    assert os.path.getsize(database_file) - size_before > 6_000_000
    assert paths.load_context(report.session, "e5999")["messages"][-1]["content"] == "w" * 1000


# --- the writer -----------------------------------------------------------------------------


def test_rows_keep_their_links_lines_and_columns_across_batches(owner):
    session = new_session(owner, "s-rows")
    entries = chain(5)
    entries.append(message("side", "e0001", text="a branch", ts=9))
    with_usage(entries[1], 100)
    with_usage(entries[3], 20)
    with transaction.atomic():
        lock_session(session.pk)
        with EntryWriter(session, batch_size=2) as writer:
            pk_of = add_all(writer, entries)
        assert writer.written == 6
    rows = stored(session)
    assert {pi_id: row.pk for pi_id, row in rows.items()} == pk_of
    for seq, entry in enumerate(entries):
        row = rows[entry["id"]]
        assert row.line == serialize_entry(entry) and row.seq == seq
        assert (row.parent.pi_id if row.parent else None) == entry["parentId"]
        assert row.parent_pi_id == entry["parentId"]
        assert row.role == entry["message"]["role"] and row.type == "message"
    session.refresh_from_db()
    assert session.usage_tokens == 101 + 21
    assert str(session.last_activity_at).startswith("2026-01-01 00:00:09")


def test_a_failure_inside_the_writer_leaves_nothing_and_the_connection_usable(owner):
    session = new_session(owner, "s-fail")
    with pytest.raises(RuntimeError, match="the caller failed"):
        with transaction.atomic():
            lock_session(session.pk)
            with EntryWriter(session, batch_size=1) as writer:
                add_all(writer, chain(3))  # written already: the COPY is open
                assert writer.written == 3
                raise RuntimeError("the caller failed")
    assert not Entry.objects.filter(session=session).exists()
    with transaction.atomic():
        lock_session(session.pk)
        with EntryWriter(session) as writer:
            add_all(writer, chain(2))
    assert sorted(stored(session)) == ["e0000", "e0001"]


def test_reserved_ids_are_never_handed_out_twice(owner):
    first, second = new_session(owner, "s-a"), new_session(owner, "s-b")
    with transaction.atomic():
        lock_session(first.pk)
        with EntryWriter(first) as writer:
            before_rows = writer.reserve_ids(3) + writer.reserve_ids(3)  # nothing written yet
            pk_of = add_all(writer, chain(4))
    assert len(set(before_rows)) == 6 and not set(before_rows) & set(pk_of.values())
    with transaction.atomic():
        lock_session(second.pk)
        with EntryWriter(second) as writer:
            later = add_all(writer, chain(4))
    assert not set(later.values()) & set(pk_of.values())
    assert min(later.values()) > max(pk_of.values())


def test_labels_and_forward_links_are_set_afterwards(owner):
    session = new_session(owner, "s-later")
    entries = chain(3)
    other = new_session(owner, "s-other")
    with transaction.atomic():
        lock_session(session.pk)
        with EntryWriter(session) as writer:
            pk_of = add_all(writer, entries)
        with EntryWriter(other) as writer:
            add_all(writer, chain(1))
        orphan_pk = pk_of["e0002"]
        Entry.objects.filter(pk=orphan_pk).update(parent=None)
        set_parents([(orphan_pk, pk_of["e0001"])])
        apply_labels(session, {"e0000": "first\x00 " + "x" * 300, "e0002": "last"})
    rows = stored(session)
    assert rows["e0002"].parent_id == pk_of["e0001"]
    assert rows["e0000"].label == ("first\ufffd " + "x" * 300)[:200]  # NUL replaced, cut
    assert rows["e0002"].label == "last" and rows["e0001"].label == ""
    assert stored(other)["e0000"].label == ""  # the other session's entry of that id


def test_many_sessions_share_one_writer_and_leave_their_usage_to_the_caller(owner):
    first, second = new_session(owner, "s-one"), new_session(owner, "s-two")
    with transaction.atomic():
        with EntryWriter(first, defer_usage=True, batch_size=3) as writer:
            add_all(writer, [with_usage(e, 7) for e in chain(2)])
            writer.next_session(second)
            add_all(writer, chain(4, "f"))
    assert writer.written == 6
    assert [session.pi_id for session, _ in writer.recorded] == ["s-one", "s-two"]
    assert sorted(stored(first)) == ["e0000", "e0001"]
    assert sorted(stored(second)) == ["f0000", "f0001", "f0002", "f0003"]
    first.refresh_from_db()
    assert first.started_at is None and first.usage_tokens == 0  # the caller's to write
    assert len(paths.load_path(second, "f0003")) == 4
