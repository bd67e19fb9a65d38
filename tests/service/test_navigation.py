"""Where a click moves the leaf is decided once (`selectors.navigation.resolve_target`): navigating,
the branch summary's position and the entry pane's "Continue here" agree, also for an
entry whose parent the session does not hold."""

from __future__ import annotations

import io
import json

import pytest

from sessions_app.core.errors import NotFound
from sessions_app.selectors.navigation import Target, resolve_target
from sessions_app.services import jobs, navigation
from sessions_app.services.importer import import_jsonl_stream

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


def _line(eid, parent, n, role, text):
    message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": n}
    if role == "assistant":
        message.update(api="openai-completions", provider="p", model="m", stopReason="stop")
    stamp = f"2026-01-01T00:00:{n:02d}.000Z"
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": stamp,
        "message": message,
    }


@pytest.fixture
def session(make_user, tmp_path):
    header = {"type": "session", "version": 3, "id": "nav-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(tmp_path)}  # fmt: skip
    entries = [
        _line("u1", None, 1, "user", "hello"),
        _line("a1", "u1", 2, "assistant", "hi"),
        _line("u2", "a1", 3, "user", "follow-up"),
        _line("o1", "gone", 4, "user", "orphan text"),  # its parent is not in the file
        _line("a2", "o1", 5, "assistant", "answer"),
    ]
    data = "\n".join(json.dumps(x) for x in [header, *entries]) + "\n"
    owner = make_user()
    return import_jsonl_stream(io.BytesIO(data.encode()), owner).session, owner


@pytest.mark.parametrize(
    "target, leaf, editor_text",
    [
        ("u2", "a1", "follow-up"),  # a user message: its parent, its text back
        ("u1", None, "hello"),  # the first message: before the first entry
        ("o1", None, "orphan text"),  # a parent the session does not hold: same
        ("a1", "a1", None),  # anything else becomes the leaf
    ],
)
def test_navigation_summary_and_entry_pane_agree(session, client, target, leaf, editor_text):
    session, owner = session
    assert resolve_target(session, target) == Target(leaf, editor_text)

    job = jobs.request_branch_summary(
        session, old_leaf_pi_id="a2", target_pi_id=target, actor=owner
    )
    assert job.params["position"] == leaf and job.params["editor_text"] == editor_text
    session.refresh_from_db()
    assert (session.leaf.pi_id if session.leaf_id else None) == leaf

    client.force_login(owner)
    pane = client.get(f"/s/{session.pi_id}/e/{target}/").content.decode()
    assert ("edit &amp; resend this message" in pane) == (editor_text is not None)

    navigation.navigate(session, "a2", actor=owner)
    moved = navigation.navigate(session, target, actor=owner)
    assert (moved.leaf, moved.editor_text, moved.moved) == (leaf, editor_text, True)


def test_an_unknown_target_is_refused(session):
    session, _ = session
    with pytest.raises(NotFound):
        resolve_target(session, "nope")
