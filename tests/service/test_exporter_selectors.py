"""Exporting sessions as pi JSONL: byte-identical round trips, live sessions, the command."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from sessions_app.core.jsonl import read_session
from sessions_app.core.messages import build_session_context
from sessions_app.models import Entry
from sessions_app.selectors import paths
from sessions_app.selectors.exporter import (
    LEAF_MARKER_TYPE,
    export_bytes,
    export_jsonl,
    iter_session_lines,
)
from sessions_app.services import fork, navigation, sessions
from sessions_app.services.importer import import_jsonl_stream
from tests.support.pi_files import FIXTURES, as_file, fixture, fixture_bytes
from tests.support.tree_data import branched_jsonl, import_branched

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def owner(make_user):
    return make_user("exporter")


@pytest.mark.embedded
@pytest.mark.parametrize("name", FIXTURES)
def test_export_of_an_imported_pi_file_is_byte_identical(name, owner, tmp_path):
    data = fixture_bytes(name)
    session = import_jsonl_stream(as_file(data), owner, filename=name).session
    out = tmp_path / "out.jsonl"
    call_command("export_pi_session", session.pi_id, "-o", str(out))
    assert out.read_bytes() == data
    assert export_jsonl(session).encode() == data


@pytest.mark.embedded
def test_export_of_a_live_session_is_a_file_pi_loads(owner):
    session = sessions.create_session(owner=owner, cwd="/srv/ü")
    sessions.append_entry(
        session,
        {"type": "message", "message": {"role": "user", "content": "héllo ✓", "timestamp": 1}},
    )
    a = sessions.append_entry(
        session,
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
                "provider": "p",
                "model": "m",
                "timestamp": 2,
            },
        },
    )
    sessions.label_entry(session, a.pi_id, "answer")
    sessions.rename_session(session, "Named")
    text = export_jsonl(session)
    lines = text.splitlines()
    assert text.endswith("\n") and len(lines) == 5
    assert '"cwd":"/srv/ü"' in lines[0] and ": " not in lines[0]  # no spaces, non-ASCII kept
    assert lines[0].startswith('{"type":"session","version":3,"id":')
    parsed = read_session(text.splitlines(keepends=True))
    assert parsed.ok and not parsed.errors and parsed.header["id"] == session.pi_id
    assert parsed.entries == paths.load_all_entries(session)
    context = build_session_context(parsed.entries)
    assert [m["role"] for m in context["messages"]] == ["user", "assistant"]
    # and it comes back as the same entries
    session.delete()
    again = import_jsonl_stream(as_file(text), owner).session
    assert export_jsonl(again) == text


def test_export_streams_in_seq_order(owner):
    head, entries = fixture(FIXTURES[1])
    session = import_jsonl_stream(as_file(fixture_bytes(FIXTURES[1])), owner).session
    lines = iter_session_lines(session)
    assert next(lines).startswith('{"type":"session"')
    assert sum(1 for _ in lines) == len(entries)
    assert export_bytes(session) == fixture_bytes(FIXTURES[1])


def test_export_command_errors(tmp_path):
    with pytest.raises(CommandError, match="No session"):
        call_command("export_pi_session", "nope", "-o", str(tmp_path / "x.jsonl"))


# JSONL exports end with piweb's leaf (pi takes the last entry as its leaf); an unchanged
# import still exports byte for byte. (pi itself opens them in tests/e2e/test_pi_opens_exports.py.)
def _ids(text: str) -> list[str]:
    return [json.loads(line)["id"] for line in text.splitlines()[1:]]


@pytest.mark.embedded
def test_a_moved_leaf_is_written_last_and_nothing_else_moves(make_user, tmp_path):
    owner = make_user()
    session = import_branched(owner, str(tmp_path))
    unchanged = export_bytes(session)
    original = branched_jsonl(str(tmp_path), bad_line=False).decode().splitlines()
    assert [json.loads(x) for x in unchanged.decode().splitlines()] == [
        json.loads(x) for x in original
    ]
    before = _ids(unchanged.decode())

    navigation.navigate(session, "e000000b", actor=owner)
    session.refresh_from_db()
    text = export_jsonl(session)
    after = _ids(text)
    assert after[-1] == "e000000b"
    assert after[:-1] == [i for i in before if i != "e000000b"]
    # Every line is still the stored line, byte for byte.
    stored = {e.pi_id: e.line for e in Entry.objects.filter(session=session)}
    assert all(stored[json.loads(line)["id"]] == line for line in text.splitlines()[1:])

    # Imported elsewhere (another user), the file gives the same entries and the same leaf.
    other = make_user()
    data = text.replace(session.pi_id, "0d0d0d0d-1111-4222-8333-444444444444").encode()
    again = import_jsonl_stream(io.BytesIO(data), other, filename="again.jsonl").session
    assert again.leaf.pi_id == "e000000b"
    assert {e.pi_id: e.line for e in Entry.objects.filter(session=again)} == stored

    # Back at the newest entry: the original order again.
    navigation.navigate(session, "e0000014", actor=owner)
    session.refresh_from_db()
    assert export_bytes(session) == unchanged


@pytest.mark.embedded
def test_leaf_none_ends_with_a_context_free_marker_root(make_user, tmp_path):
    owner = make_user()
    session = import_branched(owner, str(tmp_path))
    navigation.navigate(session, "e0000001", actor=owner)  # a root user message
    session.refresh_from_db()
    assert session.leaf_id is None
    text = export_jsonl(session)
    marker = json.loads(text.splitlines()[-1])
    assert marker["type"] == "custom" and marker["customType"] == LEAF_MARKER_TYPE
    assert marker["parentId"] is None and marker["id"] not in _ids(text)[:-1]
    assert export_jsonl(session) == text  # deterministic


@pytest.mark.embedded
def test_forks_of_the_librechat_scopes_end_with_their_leaf(make_user, tmp_path):
    owner = make_user()
    session = import_branched(owner, str(tmp_path))
    for scope in fork.SCOPES:
        forked = fork.fork_session(session, "e000000b", scope, actor=owner)
        assert _ids(export_jsonl(forked))[-1] == forked.leaf.pi_id, scope


@pytest.mark.embedded
def test_a_moved_leaf_export_reimports_into_the_same_session_and_grows(make_user, tmp_path):
    """pi continues the exported file (the file ends with piweb's leaf, so pi appends
    there); importing it again into the same session adds only pi's new entries."""
    owner = make_user()
    session = import_branched(owner, str(tmp_path))
    navigation.navigate(session, "e000000b", actor=owner)
    session.refresh_from_db()
    data = export_bytes(session)

    again = import_jsonl_stream(io.BytesIO(data), owner, filename="same.jsonl")
    assert again.status == "unchanged" and again.session.pk == session.pk

    child = {"type": "message", "id": "f0000001", "parentId": "e000000b",
             "timestamp": "2026-01-02T00:00:00.000Z",
             "message": {"role": "user", "content": "continued in pi", "timestamp": 5}}  # fmt: skip
    grown = data + (json.dumps(child, separators=(",", ":")) + "\n").encode()
    report = import_jsonl_stream(io.BytesIO(grown), owner, filename="grown.jsonl")
    assert report.status == "updated" and report.entries_added == 1
    session.refresh_from_db()
    assert session.leaf.pi_id == "f0000001" and session.leaf.parent.pi_id == "e000000b"

    # A file that is not the stored session (two entries out of place) is still refused.
    lines = data.decode().splitlines(keepends=True)
    shuffled = [lines[0], *lines[3:], lines[2], lines[1]]
    with pytest.raises(Exception, match="differs from the stored session|not in this file"):
        import_jsonl_stream(io.BytesIO("".join(shuffled).encode()), owner, filename="x.jsonl")
