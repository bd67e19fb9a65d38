"""The import_pi_sessions command: pi's session files, or directories of them, imported
for one owner; importing again changes nothing, a grown file adds what is new, and every
malformed line or file is reported with where and why."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from sessions_app.models import Entry, Session
from sessions_app.services import importer
from tests.support.pi_files import FIXTURES, header, jsonl_text, message, write_fixture

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]

SID = "aaaaaaaa-2222-3333-4444-555555555555"


@pytest.fixture
def owner(make_user):
    return make_user("importer")


def run(*args, **options) -> str:
    """The command's output (what it writes to stdout); CommandError as raised."""
    out = StringIO()
    call_command("import_pi_sessions", *map(str, args), stdout=out, **options)
    return out.getvalue()


def three() -> list[dict]:
    return [
        message("e0", None, text="first"),
        message("e1", "e0", "assistant", "second", 2),
        message("e2", "e1", text="third", ts=3),
    ]


# --- moved from test_importer.py ----------------------------------------------------------


def test_command_imports_a_pi_sessions_directory(tmp_path, make_user, capsys):
    admin = make_user("admin", is_superuser=True, is_staff=True)
    project = tmp_path / "sessions" / "--work-project--"
    project.mkdir(parents=True)
    for name in FIXTURES:
        write_fixture(project, name)
    (project / "broken.jsonl").write_text("not json\n")
    (project / "notes.txt").write_text("ignored")
    with pytest.raises(CommandError, match="1 file"):
        call_command("import_pi_sessions", str(tmp_path / "sessions"))
    out = capsys.readouterr()
    assert "2 created" in out.out and "broken.jsonl" in out.out + out.err
    assert Session.objects.filter(owner=admin).count() == 2
    call_command("import_pi_sessions", str(project / FIXTURES[0]), "--owner", "admin")
    assert "1 unchanged" in capsys.readouterr().out


def test_command_needs_an_owner(tmp_path, make_user):
    path = write_fixture(tmp_path, FIXTURES[1])
    with pytest.raises(CommandError, match="--owner"):
        call_command("import_pi_sessions", str(path))
    with pytest.raises(CommandError, match="No user named"):
        call_command("import_pi_sessions", str(path), "--owner", "ghost")
    make_user("alice")
    call_command("import_pi_sessions", str(path), "--owner", "alice")
    assert Session.objects.get().owner.username == "alice"


# --- re-import ------------------------------------------------------------------------------


def test_importing_the_same_files_again_changes_nothing(tmp_path, owner):
    for name in FIXTURES:
        write_fixture(tmp_path, name)
    first = run(tmp_path, owner=owner.username, verbosity=0)
    assert first.strip().endswith("2 file(s): 2 created, 0 updated, 0 unchanged, 0 failed")
    stored = sorted(Entry.objects.values_list("session__pi_id", "pi_id", "line"))
    again = run(tmp_path, owner=owner.username, verbosity=0)
    assert again.strip().endswith("2 file(s): 0 created, 0 updated, 2 unchanged, 0 failed")
    assert Session.objects.count() == 2
    assert sorted(Entry.objects.values_list("session__pi_id", "pi_id", "line")) == stored


def test_a_grown_file_adds_only_its_new_entries(tmp_path, owner):
    path = tmp_path / "s.jsonl"
    entries = three()
    path.write_text(jsonl_text(header(SID), entries[:2]))
    run(path, owner=owner.username)
    path.write_text(jsonl_text(header(SID), entries))
    out = run(path, owner=owner.username)
    assert f"{path}: updated" in out and "0 created, 1 updated" in out
    session = Session.objects.get()
    assert sorted(session.entries.values_list("pi_id", flat=True)) == ["e0", "e1", "e2"]


def test_the_owner_is_the_only_active_superuser_by_default(tmp_path, make_user):
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl_text(header(SID), three()))
    make_user("retired", is_superuser=True, is_active=False)
    admin = make_user("admin", is_superuser=True)
    run(path, verbosity=0)
    assert Session.objects.get().owner == admin
    make_user("second-admin", is_superuser=True)
    with pytest.raises(CommandError, match="there are several superusers"):
        run(path, verbosity=0)


# --- bad input ------------------------------------------------------------------------------


def test_malformed_lines_are_reported_with_their_number_and_the_rest_imports(tmp_path, owner):
    path = tmp_path / "s.jsonl"
    e0, e1, e2 = three()
    lines = [json.dumps(header(SID)), json.dumps(e0), "{not json", json.dumps(e1), json.dumps(e2)]
    path.write_text("\n".join(lines) + "\n")
    out = run(path, owner=owner.username)
    assert "1 malformed line(s) skipped" in out
    [detail] = [line for line in out.splitlines() if "skipped line" in line]
    assert detail.startswith("  skipped line 3: invalid JSON")
    assert "0 failed" in out
    assert Session.objects.get().entries.count() == 3
    quiet = run(path, owner=owner.username, quiet_details=True)
    assert "skipped line" not in quiet and "unchanged" in quiet


def test_details_past_the_listed_ones_are_counted(tmp_path, owner, monkeypatch):
    monkeypatch.setattr(importer, "MAX_LISTED", 1)
    path = tmp_path / "s.jsonl"
    lines = [json.dumps(header(SID)), "{bad 1", "{bad 2", "{bad 3", json.dumps(three()[0])]
    path.write_text("\n".join(lines) + "\n")
    out = run(path, owner=owner.username)
    assert "3 malformed line(s) skipped" in out and "skipped line 2: " in out
    assert "skipped line 3" not in out and "… and 2 more not listed" in out


def test_a_file_that_cannot_be_imported_fails_alone_and_is_named(tmp_path, owner):
    good = tmp_path / "a-good.jsonl"
    good.write_text(jsonl_text(header(SID), three()))
    bad = tmp_path / "b-bad.jsonl"
    bad.write_text("not json\n{also not\n")
    out = StringIO()
    with pytest.raises(CommandError, match=r"1 file\(s\) could not be imported"):
        call_command("import_pi_sessions", str(tmp_path), owner=owner.username, stdout=out)
    printed = out.getvalue()
    [failure] = [line for line in printed.splitlines() if line.startswith("FAILED")]
    assert "b-bad.jsonl: no line could be read" in failure, printed
    assert "line 1: invalid JSON" in failure
    assert "1 created, 0 updated, 0 unchanged, 1 failed" in printed
    assert list(Session.objects.values_list("pi_id", flat=True)) == [SID]


def test_paths_that_are_not_there_or_hold_no_session_file_are_refused(tmp_path, owner):
    with pytest.raises(CommandError, match="no such file or directory"):
        run(tmp_path / "missing", owner=owner.username)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not a session")
    with pytest.raises(CommandError, match=r"No \.jsonl files found"):
        run(tmp_path / "empty", owner=owner.username)
    assert not Session.objects.exists()
