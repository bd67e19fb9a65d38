"""pi 1.6.0's own contexts at six nodes of each of its 12 session files, from the pure core."""

from __future__ import annotations

import copy

import pytest

from sessions_app.core.messages import (
    build_session_context,
    context_edits,
    context_entries,
    context_from_path,
    context_from_path_reference,
    convert_to_llm,
)
from sessions_app.core.tree import index_with_ids, path_to_root
from tests.support.pi16_sessions import session, session_names


@pytest.mark.parametrize("name", session_names())
def test_contexts_equal_pi_1_6_0(name):
    _, entries, record = session(name)
    assert len(record["contexts"]) == 6
    by_id, _ = index_with_ids(entries)
    for expected in record["contexts"]:
        leaf = expected["leafId"]
        assert build_session_context(entries, leaf) == expected["context"], leaf
        path = path_to_root(by_id, by_id[leaf])
        assert context_from_path(path) == expected["context"], leaf
        assert context_from_path_reference(path) == expected["context"], leaf


def test_new_entry_types_are_present_in_the_files():
    """The replay above is only meaningful if the files hold pi 1.x entries."""
    types, roles = set(), set()
    for name in session_names():
        _, entries, _ = session(name)
        types.update(e["type"] for e in entries)
        roles.update(e["message"]["role"] for e in entries if e["type"] == "message")
    assert {"usage", "context_edit"} <= types and "system" in roles


def _entry(eid, parent, etype="message", **fields):
    return {
        "type": etype,
        "id": eid,
        "parentId": parent,
        "timestamp": "2025-01-01T00:00:00Z",
        **fields,
    }


def _user(eid, parent, text):
    return _entry(eid, parent, message={"role": "user", "content": text, "timestamp": 1})


def _assistant(eid, parent, text):
    content = [{"type": "text", "text": text}]
    return _entry(eid, parent, message={"role": "assistant", "content": content, "timestamp": 2})


def test_context_edit_applies_on_its_own_branch_and_latest_wins():
    entries = [
        _user("u1", None, "hello"),
        _assistant("a1", "u1", "long answer"),
        _entry("e1", "a1", "context_edit", targetId="a1", replacement={"content": "short"}),
        _entry("e2", "e1", "context_edit", targetId="a1", replacement={"content": "shorter"}),
        _entry("e3", "a1", "context_edit", targetId="u1", replacement=None),  # other branch
        _entry("x1", "e2", "usage", usage={"input": 1}),
        _entry("f1", "x1", "some_future_type", payload=[1, 2]),
    ]
    here = build_session_context(entries, "f1")["messages"]
    assert [m["content"] for m in here] == ["hello", [{"type": "text", "text": "shorter"}]]
    there = build_session_context(entries, "e3")["messages"]
    assert [m["role"] for m in there] == ["assistant"]
    assert there[0]["content"] == [{"type": "text", "text": "long answer"}]
    path = path_to_root(index_with_ids(entries)[0], entries[-1])
    assert context_edits(context_entries(path)) == {"a1": entries[3]}
    # Nothing was changed in place.
    assert entries[1]["message"]["content"] == [{"type": "text", "text": "long answer"}]


def test_system_messages_compaction_system_message_and_own_first_kept_id():
    system = {"role": "system", "content": "rules v1", "timestamp": 3}
    entries = [
        _user("u1", None, "one"),
        _entry("s1", "u1", message=system),
        _assistant("a1", "s1", "two"),
        _entry(
            "c1",
            "a1",
            "compaction",
            summary="sum",
            tokensBefore=9,
            firstKeptEntryId="u1",
            systemMessage={"role": "system", "content": "rules v2", "timestamp": 4},
            usage={"input": 5},
        ),  # fmt: skip
        _user("u2", "c1", "three"),
    ]
    messages = build_session_context(copy.deepcopy(entries))["messages"]
    assert [m["role"] for m in messages] == [
        "system", "compactionSummary", "user", "assistant", "user",
    ]  # fmt: skip
    assert messages[0]["content"] == "rules v2"  # the kept range's own system message is dropped
    assert convert_to_llm(messages)[0] == {"role": "system", "content": "rules v2", "timestamp": 4}
    entries[3]["firstKeptEntryId"] = "c1"  # pi 1.6.0 writes this when nothing is kept
    messages = build_session_context(entries)["messages"]
    assert [m["role"] for m in messages] == ["system", "compactionSummary", "user"]


@pytest.mark.parametrize("name", session_names())
def test_compaction_and_branch_summaries_take_pi_1_x_entries(name):
    """The seed's algorithms (pi 0.80.2) run over pi 1.x files without stumbling."""
    from sessions_app.core.compaction import find_cut_point, prepare_compaction
    from sessions_app.core.summaries import prepare_branch_entries, serialize_conversation
    from sessions_app.core.tree import SessionTree

    _, entries, record = session(name)
    tree = SessionTree(entries)
    nodes = [c["leafId"] for c in record["contexts"]]
    for leaf in nodes:
        path = tree.get_branch(leaf)
        cut = find_cut_point(path, 0, len(path), 2_000)
        assert 0 <= cut["firstKeptEntryIndex"] <= len(path)
        plan = prepare_compaction(path, {"keepRecentTokens": 2_000})
        if plan is not None:
            assert plan.first_kept_entry_id in {e["id"] for e in path}
            serialize_conversation(convert_to_llm(plan.messages_to_summarize))
        left = tree.collect_entries_for_branch_summary(leaf, nodes[0])["entries"]
        prepared = prepare_branch_entries(left, 10_000)
        serialize_conversation(convert_to_llm(prepared.messages))
