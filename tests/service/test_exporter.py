"""Exporting sessions as pi JSONL: byte-identical round trips, live sessions, the command."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from sessions_app.core.jsonl import read_session
from sessions_app.core.messages import build_session_context
from sessions_app.selectors import paths
from sessions_app.selectors.exporter import export_bytes, export_jsonl, iter_session_lines
from sessions_app.services import sessions
from sessions_app.services.importer import import_jsonl_stream
from tests.support.pi_files import FIXTURES, as_file, fixture, fixture_bytes

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
