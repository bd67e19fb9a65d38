"""services/sync.py on the database: a client's lines appended once, gaps and forks
refused with the server's offset, new files from their header, rewrites, and piweb's
lines waiting for their write-back."""

from __future__ import annotations

import pytest

from sessions_app.core.errors import ServiceError
from sessions_app.models import SyncedFile
from sessions_app.selectors import exporter
from sessions_app.selectors.sync import files_with_pending, pending_lines
from sessions_app.services import sessions, sync
from tests.support.pi_files import chain_lines, header, line

pytestmark = pytest.mark.django_db

SID = "0199aaaa-bbbb-7ccc-8ddd-0000000000aa"
HEADER = line(header(SID))
LINES = chain_lines(6)
FILE = HEADER + b"".join(LINES)
CLIENT, PATH = "alice's laptop", "~/.pi/agent/sessions/--code-app--/s.jsonl"


def _push(user, offset, data, **kwargs):
    return sync.push(user, CLIENT, PATH, offset, data, **kwargs)


def _export(row) -> bytes:
    return exporter.export_bytes(row.session)


def test_a_new_file_is_created_from_its_header_and_appended_in_batches(make_user):
    user = make_user()
    first = HEADER + b"".join(LINES[:2])
    row = _push(user, 0, first)
    assert (row.offset, row.lines, row.session.pi_id) == (len(first), 3, SID)
    row = _push(user, len(first), b"".join(LINES[2:]))
    assert row.offset == len(FILE)
    assert row.session.entry_count == 6
    assert _export(row) == FILE


def test_the_same_batch_twice_changes_nothing(make_user):
    user = make_user()
    _push(user, 0, HEADER + LINES[0])
    batch = b"".join(LINES[1:4])
    start = len(HEADER + LINES[0])
    _push(user, start, batch)
    row = _push(user, start, batch)  # the answer was lost; the client sends it again
    assert row.offset == start + len(batch)
    assert row.session.entry_count == 4
    row = _push(user, 0, HEADER + b"".join(LINES[:5]))  # overlapping, one line new
    assert row.session.entry_count == 5
    assert _export(row) == HEADER + b"".join(LINES[:5])


def test_a_gap_is_refused_with_the_servers_offset(make_user):
    user = make_user()
    row = _push(user, 0, HEADER + LINES[0])
    with pytest.raises(sync.SyncConflict) as caught:
        _push(user, row.offset + len(LINES[1]), LINES[2])
    assert caught.value.status == 409
    assert caught.value.offset == row.offset
    assert SyncedFile.objects.get(pk=row.pk).session.entry_count == 1


def test_lines_that_differ_from_what_the_server_holds_are_refused(make_user):
    user = make_user()
    row = _push(user, 0, HEADER + LINES[0] + LINES[1])
    other = line({**__import__("json").loads(LINES[1]), "timestamp": "2026-02-02T00:00:00.000Z"})
    with pytest.raises(sync.SyncConflict) as caught:
        _push(user, len(HEADER + LINES[0]), other + LINES[2])
    assert caught.value.offset == row.offset
    assert SyncedFile.objects.get(pk=row.pk).session.entry_count == 2


def test_a_first_batch_must_start_at_zero_and_hold_a_header(make_user):
    user = make_user()
    with pytest.raises(sync.SyncConflict) as caught:
        _push(user, 100, LINES[0])
    assert caught.value.offset == 0
    with pytest.raises(ServiceError):
        _push(user, 0, LINES[0])  # no header: not a pi session
    assert not SyncedFile.objects.filter(session__isnull=False).exists()


def test_only_complete_lines_within_the_upload_limit_are_taken(make_user, settings):
    user = make_user()
    with pytest.raises(ServiceError, match="complete lines"):
        _push(user, 0, HEADER + LINES[0][:-1])
    settings.PIWEB_MAX_UPLOAD_BYTES = len(HEADER) + 10
    with pytest.raises(ServiceError) as caught:
        _push(user, 0, HEADER + LINES[0])
    assert caught.value.status == 413


def test_the_same_path_on_two_clients_and_on_the_server_are_three_files(make_user):
    user = make_user()
    row = _push(user, 0, HEADER + LINES[0])
    other = sync.push(user, "bob's laptop", PATH, 0, line(header(SID[:-2] + "bb")))
    assert other.pk != row.pk and other.session_id != row.session_id
    assert row.session.source_path == ""  # never mistaken for a server file of that path


def test_a_rewritten_file_sent_whole_adds_what_the_session_lacks(make_user):
    user = make_user()
    _push(user, 0, HEADER + b"".join(LINES[:3]))
    row = _push(user, 0, FILE, rewrite=True)
    assert (row.offset, row.session.entry_count) == (len(FILE), 6)
    assert _export(row) == FILE


def test_piweb_lines_wait_for_the_client_and_come_back_once(make_user):
    user = make_user()
    row = _push(user, 0, FILE)
    entry = sessions.append_entry(
        row.session, {"type": "session_info", "name": "reviewed"}, actor=user
    )
    row.refresh_from_db()
    assert [item["id"] for item in pending_lines(row)] == [entry.pi_id]
    assert files_with_pending(user, CLIENT) == [row]
    written_back = (entry.line + "\n").encode()
    row = _push(user, len(FILE), written_back + LINES[0].replace(b"00000000", b"000000f0"))
    assert row.pending == []
    assert row.offset == len(FILE) + len(written_back) + len(LINES[0])
    assert row.session.entry_count == 8  # piweb's entry is not stored twice
    assert _export(row) == FILE + written_back + LINES[0].replace(b"00000000", b"000000f0")


def test_a_synced_session_is_listed_searched_counted_and_shows_its_machine(make_user):
    from sessions_app.selectors.provenance import session_provenance
    from sessions_app.selectors.search import search
    from sessions_app.selectors.sessions import visible_sessions
    from tests.support.pi_files import usage_line

    user = make_user()
    row = _push(user, 0, HEADER + b"".join(LINES[:2]))
    row = _push(user, row.offset, line(usage_line("u0000001", "00000001", input=7, output=3)))
    assert row.session in visible_sessions(user)
    assert [hit.entry_pi_id for hit in search(user, '"text number 1"').hits] == ["00000001"]
    assert row.session.usage_tokens == 10
    provenance = session_provenance(row.session)
    assert (provenance.kind, provenance.path) == ("synced", PATH)
    assert provenance.label == f"Synced live from {CLIENT}"
    assert provenance.resume_command == "pi --session ~/.pi/agent/sessions/--code-app--/s.jsonl"


def test_continue_in_offers_a_synced_session_what_it_offers_an_import(make_user):
    from sessions_app.selectors.workspaces import options
    from tests.support.pi_files import do_import

    user = make_user()
    synced = _push(user, 0, FILE).session
    imported = do_import(line(header(SID[:-2] + "dd")) + b"".join(LINES), user).session
    assert options(synced, user) == options(imported, user)
