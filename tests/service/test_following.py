"""The follower's services on real files (services/following.py, importer.append_lines):
what happens to a session when its file appears, grows, is rewritten, renamed or deleted.
The watcher process itself is tested in tests/e2e/test_follow_watcher.py."""

from __future__ import annotations

import io
import logging
import os

import pytest

from sessions_app.models import Entry, FollowedFile, Session
from sessions_app.selectors.exporter import export_bytes
from sessions_app.services import following, search
from tests.support.pi_files import FOLLOWED_SID as SID
from tests.support.pi_files import append, chain_lines, header, line, session_file

pytestmark = [pytest.mark.embedded, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner(make_user):
    return make_user("follower")


def entry_ids(session) -> list[str]:
    return list(
        Entry.objects.filter(session=session).order_by("seq").values_list("pi_id", flat=True)
    )


def test_new_file_then_appends_then_nothing(tmp_path, owner):
    path = session_file(tmp_path, 2)
    result = following.sync_file(str(path), owner)
    assert result.action == "created" and result.entries_added == 2
    session = Session.objects.get(pi_id=SID)
    assert session.source_path == str(path)
    state = FollowedFile.objects.get(path=str(path))
    assert (state.state, state.offset, state.lines) == ("following", path.stat().st_size, 3)
    assert state.last_read_at is not None

    append(path, b"".join(chain_lines(3, start=2)))
    result = following.sync_file(str(path), owner)
    assert (result.action, result.entries_added) == ("appended", 3)
    assert entry_ids(session) == [f"{n:08x}" for n in range(5)]
    session.refresh_from_db()
    assert session.entry_count == 5 and session.leaf.pi_id == f"{4:08x}"
    assert Entry.objects.get(session=session, pi_id=f"{3:08x}").parent.pi_id == f"{2:08x}"
    # search finds the appended text (indexed in the append's transaction)
    hits = search.search(owner, '"number 4"').hits
    assert [h.entry_pi_id for h in hits] == [f"{4:08x}"]

    # every later append is read as one (never mistaken for a rewrite)
    for n in range(5, 8):
        append(path, chain_lines(1, start=n)[0])
        assert following.sync_file(str(path), owner).action == "appended"
    assert following.sync_file(str(path), owner).action == "unchanged"
    session.refresh_from_db()  # the export ends with the session's leaf, as now stored
    assert session.leaf.pi_id == f"{7:08x}"
    assert export_bytes(session) == path.read_bytes()


def test_a_line_split_across_two_writes_is_read_once_complete(tmp_path, owner, caplog):
    path = session_file(tmp_path, 1)
    following.sync_file(str(path), owner)
    whole = chain_lines(1, start=1)[0]
    append(path, whole[:25])
    with caplog.at_level(logging.WARNING, logger="piweb.follow"):
        assert following.sync_file(str(path), owner).action == "waiting"
        state = FollowedFile.objects.get(path=str(path))
        assert state.offset == path.stat().st_size - 25 and state.lines == 2
        append(path, whole[25:])
        result = following.sync_file(str(path), owner)
    assert (result.action, result.entries_added) == ("appended", 1)
    # the half line was never parsed (nor reported) as bad
    assert not [r for r in caplog.records if r.name == "piweb.follow" and r.levelname == "WARNING"]
    assert entry_ids(Session.objects.get(pi_id=SID)) == ["00000000", "00000001"]


def test_a_new_file_with_a_half_written_last_line(tmp_path, owner):
    path = session_file(tmp_path, 2)
    append(path, chain_lines(1, start=2)[0][:-10])
    assert following.sync_file(str(path), owner).entries_added == 2
    append(path, chain_lines(1, start=2)[0][-10:])
    assert following.sync_file(str(path), owner).entries_added == 1
    assert len(entry_ids(Session.objects.get(pi_id=SID))) == 3


def test_header_only_file_is_an_empty_session_that_then_grows(tmp_path, owner):
    path = tmp_path / f"x_{SID}.jsonl"
    path.write_bytes(line(header(SID)))
    assert following.sync_file(str(path), owner).action == "created"
    session = Session.objects.get(pi_id=SID)
    assert session.entry_count == 0 and session.leaf_id is None
    append(path, b"".join(chain_lines(2)))
    assert following.sync_file(str(path), owner).entries_added == 2


def test_a_rewrite_by_pi_migration_is_applied_once(tmp_path, owner):
    """pi migrates a v2 file by rewriting it as v3 (role hookMessage -> custom)."""
    path = tmp_path / f"x_{SID}.jsonl"
    hook = {
        "type": "message",
        "id": "0000000a",
        "parentId": "00000001",
        "timestamp": "2026-01-01T00:01:00.000Z",
        "message": {
            "role": "hookMessage",
            "customType": "note",
            "content": "hi",
            "display": True,
            "timestamp": 5,
        },
    }
    v2 = line(header(SID, version=2)) + b"".join(chain_lines(2)) + line(hook)
    path.write_bytes(v2)
    assert following.sync_file(str(path), owner).entries_added == 3
    migrated = dict(hook, message=dict(hook["message"], role="custom"))
    rewritten = tmp_path / "rewrite.tmp"
    rewritten.write_bytes(line(header(SID)) + b"".join(chain_lines(2)) + line(migrated))
    os.replace(rewritten, path)  # a new inode, as pi's rewrite
    for _ in range(2):
        result = following.sync_file(str(path), owner)
        assert result.entries_added == 0 and result.action == "unchanged"
    session = Session.objects.get(pi_id=SID)
    assert session.entry_count == 3
    state = FollowedFile.objects.get(path=str(path))
    assert state.appendable and state.inode == path.stat().st_ino
    append(
        path, chain_lines(1, start=2)[0].replace(b'"parentId":"00000001"', b'"parentId":"0000000a"')
    )
    assert following.sync_file(str(path), owner).action == "appended"
    assert Entry.objects.get(session=session, pi_id="00000002").parent.pi_id == "0000000a"


def test_a_rewrite_in_place_with_more_lines(tmp_path, owner):
    path = session_file(tmp_path, 3)
    following.sync_file(str(path), owner)
    data = path.read_bytes()
    # same inode, the head changed (a different cwd in the header is another session)
    path.write_bytes(data.replace(b'"text number 0"', b'"text number X"'))
    result = following.sync_file(str(path), owner)
    assert result.action == "refused" and "differs from the stored session" in result.message
    session = Session.objects.get(pi_id=SID)
    assert session.entry_count == 3  # nothing lost, nothing doubled
    path.write_bytes(data + b"".join(chain_lines(1, start=3)))
    assert following.sync_file(str(path), owner).entries_added == 1


def test_deleted_then_renamed_back(tmp_path, owner):
    path = session_file(tmp_path, 2)
    following.sync_file(str(path), owner)
    moved = path.with_name("renamed.jsonl")
    os.rename(path, moved)
    assert following.sync_file(str(path), owner).action == "gone"
    session = Session.objects.get(pi_id=SID)
    assert FollowedFile.objects.get(path=str(path)).state == "gone"
    assert session.entry_count == 2  # the session stays
    append(moved, chain_lines(1, start=2)[0])
    result = following.sync_file(str(moved), owner)
    assert (result.action, result.entries_added) == ("appended", 1)
    state = FollowedFile.objects.get(session=session)
    assert (state.path, state.state) == (str(moved), "following")
    session.refresh_from_db()
    assert session.source_path == str(moved)


def test_not_a_pi_file_is_reported_once(tmp_path, owner, caplog):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": "world"}\n')
    with caplog.at_level(logging.WARNING, logger="piweb.follow"):
        for _ in range(3):
            totals = following.scan([str(tmp_path)], owner)
        path.write_text('{"hello": "world"}\n{"more": 1}\n')
        following.scan([str(tmp_path)], owner)
    assert totals.refused == 0  # unchanged since it was refused
    warnings = [r.getMessage() for r in caplog.records if r.name == "piweb.follow"]
    assert len(warnings) == 1 and "notes.jsonl: not followed" in warnings[0]
    assert not Session.objects.exists()


def test_unreadable_file_is_logged_and_the_scan_goes_on(tmp_path, owner, caplog, monkeypatch):
    bad = session_file(tmp_path, 1, sid="0199aaaa-bbbb-7ccc-8ddd-00000000000b")
    good = session_file(tmp_path, 2)
    real_open = open

    def guarded_open(file, *args, **kwargs):
        if str(file) == str(bad):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(following, "open", guarded_open, raising=False)
    with caplog.at_level(logging.WARNING, logger="piweb.follow"):
        totals = following.scan([str(tmp_path)], owner)
    assert (totals.errors, totals.changed) == (1, 1)
    assert any(
        str(bad) in r.getMessage() and "Permission denied" in r.getMessage() for r in caplog.records
    )
    assert Session.objects.get(pi_id=SID).entry_count == 2
    monkeypatch.undo()
    totals = following.scan([str(tmp_path)], owner)
    assert totals.changed == 1 and Session.objects.count() == 2
    assert str(good) in FollowedFile.objects.values_list("path", flat=True)


def test_scan_skips_unchanged_files_and_marks_deleted_ones(tmp_path, owner):
    paths = [
        session_file(tmp_path / f"d{n}", 1, sid=f"0199aaaa-bbbb-7ccc-8ddd-{n:012d}")
        for n in range(5)
    ]
    first = following.scan([str(tmp_path)], owner)
    assert (first.files, first.changed) == (5, 5)
    again = following.scan([str(tmp_path)], owner)
    assert (again.unchanged, again.changed) == (5, 0)
    paths[0].unlink()
    third = following.scan([str(tmp_path)], owner)
    assert third.gone == 1 and Session.objects.count() == 5


def test_runpiweb_banner_says_how_to_follow_the_pi_folder(tmp_path, settings, owner, make_user):
    from io import StringIO

    from sessions_app.management.commands.runpiweb import Command

    settings.PIWEB_PI_SESSION_DIRS = []
    settings.PIWEB_PI_DEFAULT_SESSION_DIR = tmp_path

    def banner():
        command = Command(stdout=StringIO(), stderr=StringIO())
        command._follow_banner(command._follower())
        return command.stdout._out.getvalue()

    assert f"PIWEB_PI_SESSION_DIRS={tmp_path}" in banner()
    settings.PIWEB_PI_DEFAULT_SESSION_DIR = tmp_path / "missing"
    assert banner() == ""
    settings.PIWEB_PI_DEFAULT_SESSION_DIR = tmp_path
    make_user("colleague")
    assert banner() == ""  # a team server: no hint about one person's folder
    # following asked for, but no owner can be told: said so, nothing started
    settings.PIWEB_PI_SESSION_DIRS = [str(tmp_path)]
    command = Command(stdout=StringIO(), stderr=StringIO())
    assert command._follower() is None
    assert "PIWEB_PI_SESSION_OWNER" in command.stderr._out.getvalue()
    settings.PIWEB_PI_SESSION_OWNER = owner.username
    assert command._follower()[-2:] == ["--owner", owner.username]


def test_provenance_and_resume_command_on_the_session_page(tmp_path, owner, client):
    from django.urls import reverse

    from sessions_app.services import sessions
    from sessions_app.services.importer import import_jsonl_stream

    client.force_login(owner)
    # followed: the file's path, quoted for the shell, and the time of the last read
    path = tmp_path / "with space" / f"2026-01-01T00-00-00-000Z_{SID}.jsonl"
    path.parent.mkdir()
    path.write_bytes(line(header(SID)) + b"".join(chain_lines(2)))
    following.sync_file(str(path), owner)
    page = client.get(reverse("sessions_app:session_detail", args=[SID])).content.decode()
    assert "Followed live" in page and "last line read from disk" in page
    assert f"pi --session &#x27;{path}&#x27;" in page
    path.unlink()
    following.sync_file(str(path), owner)
    page = client.get(reverse("sessions_app:session_provenance", args=[SID])).content.decode()
    assert "file gone from disk" in page
    assert f"pi --session 2026-01-01T00-00-00-000Z_{SID}.jsonl" in page

    # uploaded once: the command refers to the JSONL export, named as pi names its files
    other = "0199aaaa-bbbb-7ccc-8ddd-0000000000ff"
    data = line(header(other)) + b"".join(chain_lines(1))
    import_jsonl_stream(io.BytesIO(data), owner, filename="upload.jsonl")
    page = client.get(reverse("sessions_app:session_detail", args=[other])).content.decode()
    assert "Imported once" in page
    name = f"2026-01-01T00-00-00-000Z_{other}.jsonl"
    assert f"pi --session {name}" in page and f'download="{name}"' in page
    response = client.get(reverse("sessions_app:export", args=[other, "jsonl"]))
    assert f'filename="{name}"' in response["Content-Disposition"]
    assert b"".join(response.streaming_content) == data

    made = sessions.create_session(owner=owner, cwd=str(tmp_path))
    page = client.get(reverse("sessions_app:session_detail", args=[made.pi_id])).content.decode()
    assert "Started in piweb" in page
    stamp = made.header_timestamp.replace(":", "-").replace(".", "-")
    assert f"pi --session {stamp}_{made.pi_id}.jsonl" in page


def test_a_session_imported_from_disk_resumes_from_its_file(tmp_path, owner):
    from django.core.management import call_command

    from sessions_app.selectors.provenance import session_provenance

    path = session_file(tmp_path, 1)
    call_command("import_pi_sessions", str(path), owner=owner.username, verbosity=0)
    session = Session.objects.get(pi_id=SID)
    provenance = session_provenance(session)
    assert (provenance.kind, provenance.path) == ("imported", str(path.resolve()))
    assert provenance.resume_command == f"pi --session {path.resolve()}"
