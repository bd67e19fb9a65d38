"""selectors/panels/chat.py: the chat header's model picker. With pi's settings.json naming
`enabledModels`, the models pi cycles through come first, in a group of their own; every
other model the user can call stays pickable, by provider, as in pi's /model."""

import json

import pytest

from sessions_app.rendering import render_entry
from sessions_app.selectors.panels.chat import SCOPED_GROUP, model_context, tool_cards
from sessions_app.services import sessions

pytestmark = pytest.mark.django_db

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture
def agent(tmp_path, settings, monkeypatch):
    folder = tmp_path / "agent"
    folder.mkdir()
    settings.PIWEB_PI_AGENT_DIR = str(folder)
    for name in KEYS:
        monkeypatch.setenv(name, f"env-{name.lower()}")
    return folder


def picker(agent, make_user, workspace, enabled=None):
    if enabled is not None:
        (agent / "settings.json").write_text(json.dumps({"enabledModels": enabled}))
    user = make_user(is_staff=True)  # the server's environment keys serve staff
    session = sessions.create_session(owner=user, cwd=str(workspace))
    return model_context(session, user)["groups"]


def test_without_enabled_models_the_picker_is_grouped_by_provider(agent, make_user, workspace):
    groups = picker(agent, make_user, workspace)
    labels = [label for label, _ in groups]
    assert SCOPED_GROUP not in labels and labels == sorted(labels)
    assert {"openai", "anthropic"} <= set(labels)


def test_enabled_models_come_first_and_the_rest_stay_pickable(agent, make_user, workspace):
    everything = {c.ref for _, group in picker(agent, make_user, workspace) for c in group}
    groups = picker(agent, make_user, workspace, ["openai/gpt-4o", "claude-sonnet-4-5*:high"])
    label, scoped = groups[0]
    refs = [c.ref for c in scoped]
    assert label == SCOPED_GROUP and "openai/gpt-4o" in refs
    assert refs and all(
        r == "openai/gpt-4o" or r.startswith("anthropic/claude-sonnet-4-5") for r in refs
    )
    rest = [c.ref for _, group in groups[1:] for c in group]
    assert not set(refs) & set(rest)
    assert set(refs) | set(rest) == everything  # nothing disappears from the picker


def test_a_scope_that_matches_nothing_leaves_the_picker_as_it_was(agent, make_user, workspace):
    groups = picker(agent, make_user, workspace, ["nobody/none"])
    assert SCOPED_GROUP not in [label for label, _ in groups]


# --- tool_cards: each call of the transcript becomes one card with its result, status and
# duration (issue 34); no database needed.


def entry(eid, second, message):
    payload = {
        "type": "message",
        "id": eid,
        "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
        "message": message,
    }
    return {"payload": payload, "id": eid, "role": message["role"], "parts": render_entry(payload)}


def call(eid, second, *calls):
    blocks = [
        {"type": "toolCall", "id": cid, "name": "bash", "arguments": {"command": cmd}}
        for cid, cmd in calls
    ]
    return entry(eid, second, {"role": "assistant", "content": blocks})


def result(eid, second, cid, text, error=False):
    content = [{"type": "text", "text": text}]
    message = {"role": "toolResult", "toolCallId": cid, "toolName": "bash", "content": content}
    return entry(eid, second, {**message, "isError": error})


def cards(entries):
    return [p for e in entries for p in e["parts"] if p.kind == "tool_call"]


def test_results_move_under_their_calls_with_status_and_duration():
    entries = [
        call("a1", 0, ("c1", "make"), ("c2", "make test")),
        result("r1", 3, "c1", "\n  built ok\nmore"),
        result("r2", 15, "c2", "1 failed", error=True),
        entry("a2", 16, {"role": "assistant", "content": [{"type": "text", "text": "Hm."}]}),
    ]
    out = tool_cards(entries)
    assert [e["id"] for e in out] == ["a1", "a2"]  # the result messages joined their calls
    first, second = cards(out)
    assert (first.title, first.extra["status"], first.extra["duration"]) == (
        "$ make",
        "ok",
        "3.0 s",
    )
    assert first.extra["result"].extra["preview"] == "built ok"
    assert (second.extra["status"], second.extra["duration"]) == ("error", "12 s")


def test_a_call_without_a_result_runs_only_while_a_run_is_going():
    entries = [call("a1", 0, ("c1", "sleep 100"))]
    (card,) = cards(tool_cards(entries, running=True))
    assert card.extra["status"] == "running"
    entries = [call("a1", 0, ("c1", "sleep 100"))]
    (card,) = cards(tool_cards(entries, running=False))
    assert card.extra["status"] == "missing"  # stopped: no result will come
    entries = [
        call("a1", 0, ("c1", "x")),
        entry("u1", 5, {"role": "user", "content": "stop that"}),
    ]
    (card,) = cards(tool_cards(entries, running=True))
    assert card.extra["status"] == "missing"  # a later message came without its result


def test_calls_at_the_end_of_an_earlier_chunk_get_no_status():
    """A chunk of the branch shown above the transcript ("Show earlier"): its last calls
    were answered after it, so they are neither running nor without a result."""
    (card,) = cards(tool_cards([call("a1", 0, ("c1", "make"))], running=None))
    assert "status" not in card.extra


def test_the_transcript_shows_the_branch_end_and_the_earlier_entries_a_chunk_at_a_time(
    make_user,
):
    from sessions_app.selectors.panels.chat import TRANSCRIPT_LIMIT, transcript_context
    from tests.support.branchy_session import user as user_entry

    owner = make_user("chunks")
    session = sessions.create_session(owner=owner, cwd="/w", name="long")
    total = TRANSCRIPT_LIMIT * 2 + 7
    for i in range(total):
        sessions.append_entry(session, user_entry(f"message {i:03d}"), actor=owner)
    session.refresh_from_db()
    seen: list[str] = []
    last = transcript_context(session)
    assert not last["earlier"] and len(last["entries"]) == TRANSCRIPT_LIMIT
    assert last["hidden"] == total - TRANSCRIPT_LIMIT
    chunk = last
    while chunk["hidden"]:
        seen = [e["id"] for e in chunk["entries"]] + seen
        chunk = transcript_context(session, before=chunk["first"])
        assert chunk["earlier"]
    seen = [e["id"] for e in chunk["entries"]] + seen
    # every entry once, in order, root first
    from sessions_app.selectors.paths import load_path

    assert seen == [p["id"] for p in load_path(session, session.leaf.pi_id)]
    # an id not on the branch shows nothing (the page is stale: a refresh puts it right)
    assert transcript_context(session, before="nope")["entries"] == []
