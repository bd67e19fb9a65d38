"""Sessions as real pi users have them: import, render, export byte for byte.

A generated 1 MB file with pi's real shapes (tests/support/real_sessions.py), and the 12
files pi 1.6.0 wrote (../shared/sessions-pi-1.6.0, with usage / context_edit / system
messages), each imported, drawn (session page, entry panes, inspector) and exported.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.urls import reverse

from sessions_app.models import Entry
from sessions_app.selectors.exporter import export_bytes
from sessions_app.services.importer import import_jsonl_stream
from tests.support.pi16_sessions import sessions_dir as pi160_dir
from tests.support.real_sessions import real_session_bytes
from tests.support.web import client_for

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


def pi160_files() -> list[Path]:
    files = sorted(pi160_dir().glob("session-*.jsonl"))
    if len(files) != 12:
        pytest.fail(f"expected the 12 pi 1.6.0 session files in {pi160_dir()}, found {len(files)}")
    return files


def _get(client, name, session, *args) -> str:
    response = client.get(reverse(f"sessions_app:{name}", args=[session.pi_id, *args]))
    assert response.status_code == 200, (name, args, response.status_code)
    return response.content.decode()


def _first(session, **filters) -> Entry:
    return Entry.objects.filter(session=session, **filters).order_by("seq").first()


def test_a_1mb_real_shaped_session_imports_renders_and_exports_byte_exact(make_user):
    data = real_session_bytes()
    assert len(data) >= 1_000_000
    owner = make_user()
    report = import_jsonl_stream(io.BytesIO(data), owner, filename="real.jsonl")
    assert report.status == "created" and not report.skipped and not report.warnings
    session = report.session
    assert report.entries_added == len(data.splitlines()) - 1
    assert export_bytes(session) == data
    assert session.name == "订单服务：库存并发修复"

    client = client_for(owner)
    page = _get(client, "session_detail", session)
    assert "订单服务" in page

    # The read tool's image result: its text and the PNG as a data: URL.
    image = next(
        e
        for e in Entry.objects.filter(session=session, role="toolResult").order_by("seq")
        if '"type":"image"' in e.line
    )
    pane = _get(client, "entry_pane", session, image.pi_id)
    png = image.payload["message"]["content"][1]["data"]
    assert f"data:image/png;base64,{png}" in pane

    # The aborted run: the partial message says it stopped, and the error is shown.
    aborted = next(
        e
        for e in Entry.objects.filter(session=session, role="assistant").order_by("seq")
        if '"stopReason":"aborted"' in e.line
    )
    pane = _get(client, "entry_pane", session, aborted.pi_id)
    assert "Request was aborted" in pane
    # Thinking with a long signature: the thought is shown, the signature is not dumped.
    signed = next(
        e
        for e in Entry.objects.filter(session=session, role="assistant").order_by("seq")
        if '"thinkingSignature"' in e.line
    )
    pane = _get(client, "entry_pane", session, signed.pi_id)
    thinking = signed.payload["message"]["content"][0]
    assert thinking["thinking"].split()[0] in pane
    assert thinking["thinkingSignature"][:200] not in pane
    _get(client, "inspector", session)


def test_the_pi_1_6_0_files_import_render_and_export_byte_exact(make_user):
    owner = make_user()
    client = client_for(owner)
    seen_types: set[str] = set()
    for path in pi160_files():
        data = path.read_bytes()
        report = import_jsonl_stream(io.BytesIO(data), owner, filename=path.name)
        assert report.status == "created" and not report.skipped, path.name
        session = report.session
        assert export_bytes(session) == data, path.name
        _get(client, "session_detail", session)
        _get(client, "inspector", session)
        # One entry pane of every type (and message role) the file holds.
        shown: set[tuple[str, str]] = set()
        for entry in Entry.objects.filter(session=session).order_by("seq"):
            if (entry.type, entry.role) in shown:
                continue
            shown.add((entry.type, entry.role))
            seen_types.add(entry.type if entry.type != "message" else f"message:{entry.role}")
            _get(client, "entry_pane", session, entry.pi_id)
    assert {"usage", "context_edit", "message:system", "compaction"} <= seen_types


def test_unknown_future_entry_types_round_trip_and_render(make_user):
    owner = make_user()
    header = {"type": "session", "version": 3, "id": "f0f0f0f0-0000-4000-8000-000000000001",
              "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}  # fmt: skip
    lines = [
        header,
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": "hello", "timestamp": 1}},
        {"type": "hologram", "id": "a2", "parentId": "a1", "timestamp": "2026-01-01T00:00:02.000Z",
         "payload": {"nested": [1, 2.5, None, "μ"], "big": 1e300}, "note": "<b>not html</b>"},
        {"type": "message", "id": "a3", "parentId": "a2", "timestamp": "2026-01-01T00:00:03.000Z",
         "message": {"role": "narrator", "content": [{"type": "sparkle", "x": 1}], "timestamp": 3}},
        {"type": "message", "id": "a4", "parentId": "a3", "timestamp": "2026-01-01T00:00:04.000Z",
         "message": {"role": "user", "content": "still here", "timestamp": 4}},
    ]  # fmt: skip
    data = "".join(json.dumps(x, ensure_ascii=False, separators=(",", ":")) + "\n" for x in lines)
    report = import_jsonl_stream(io.BytesIO(data.encode()), owner, filename="future.jsonl")
    session = report.session
    assert export_bytes(session) == data.encode()
    client = client_for(owner)
    page = _get(client, "session_detail", session)
    assert "hologram" in page
    pane = _get(client, "entry_pane", session, "a2")
    assert "hologram" in pane and "nested" in pane and "&lt;b&gt;not html&lt;/b&gt;" in pane
    pane = _get(client, "entry_pane", session, "a3")
    assert "narrator" in pane and "sparkle" in pane
    _get(client, "inspector", session)
