"""build_session_context / convert_to_llm (sessions_app.core.messages)."""

from __future__ import annotations

import copy
import random

import pytest

from sessions_app.core.messages import (
    BRANCH_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_PREFIX,
    UNSET,
    bash_execution_to_text,
    build_session_context,
    context_edits,
    context_entries,
    context_from_path,
    context_from_path_reference,
    convert_to_llm,
    iso_to_ms,
)
from sessions_app.core.tree import (
    SessionTree,
    TreeCycleError,
    index_by_id,
    index_with_ids,
    path_to_root,
)
from tests.support.context_entries import assistant, entry, random_path, tool_result, user
from tests.support.pi16_sessions import session, session_names


def test_null_leaf_is_empty_context():
    es = [user("a", None)]
    assert build_session_context(es, None) == {
        "messages": [],
        "thinkingLevel": "off",
        "model": None,
    }
    assert build_session_context([]) == {"messages": [], "thinkingLevel": "off", "model": None}


def test_unknown_or_empty_leaf_falls_back_to_last_entry():
    es = [user("a", None, text="one"), user("b", "a", text="two")]
    for leaf in (UNSET, "missing", ""):
        got = build_session_context(es, leaf)
        assert [m["content"] for m in got["messages"]] == ["one", "two"]
    assert [m["content"] for m in build_session_context(es, "a")["messages"]] == ["one"]


def test_settings_model_and_thinking_follow_the_path():
    es = [
        user("a", None),
        entry("t", "a", "thinking_level_change", thinkingLevel="high"),
        assistant("b", "t", model="first"),
        entry("m", "b", "model_change", provider="p2", modelId="second"),
    ]
    ctx = build_session_context(es)
    assert ctx["thinkingLevel"] == "high"
    assert ctx["model"] == {"provider": "p2", "modelId": "second"}
    assert build_session_context(es, "b")["model"] == {"provider": "prov", "modelId": "first"}


def test_compaction_emits_summary_kept_then_after():
    es = [
        user("u1", None, text="old"),
        assistant("a1", "u1"),
        user("u2", "a1", text="kept"),
        entry("c", "u2", "compaction", summary="SUM", firstKeptEntryId="u2", tokensBefore=5),
        user("u3", "c", text="new"),
    ]
    msgs = build_session_context(es)["messages"]
    assert [m["role"] for m in msgs] == ["compactionSummary", "user", "user"]
    assert msgs[0] == {
        "role": "compactionSummary",
        "summary": "SUM",
        "tokensBefore": 5,
        "timestamp": iso_to_ms(es[3]["timestamp"]),
    }
    llm = convert_to_llm(msgs)
    assert llm[0]["content"][0]["text"] == COMPACTION_SUMMARY_PREFIX + "SUM\n</summary>"


def test_empty_branch_summary_is_skipped_in_context():
    es = [
        user("a", None),
        entry("b", "a", "branch_summary", fromId="x", summary=""),
        entry("c", "b", "branch_summary", fromId="a", summary="went"),
    ]
    msgs = build_session_context(es)["messages"]
    assert [m["role"] for m in msgs] == ["user", "branchSummary"]
    assert convert_to_llm(msgs)[1]["content"][0]["text"] == BRANCH_SUMMARY_PREFIX + "went</summary>"


def test_cycle_raises():
    es = [user("a", "c"), user("b", "a"), user("c", "b")]
    with pytest.raises(TreeCycleError):
        build_session_context(es)


def test_duplicate_ids_follow_last_entry_like_pi():
    # pi's Map keeps the last entry per id; the chain fast path must not hide that.
    es = [
        user("x", None, text="first x"),
        user("y", "x", text="y"),
        user("x", "y", text="second x"),
        user("z", "x"),
    ]
    # walking from z: parent x -> the *last* x (parent y) -> y -> parent x -> last x again: a loop
    with pytest.raises(TreeCycleError):
        build_session_context(es)


@pytest.mark.parametrize("seed", range(40))
def test_fast_context_equals_reference_on_random_paths(seed):
    rng = random.Random(seed)
    path = random_path(rng, rng.randint(1, 120))
    assert context_from_path(path) == context_from_path_reference(path)
    # the whole-list entry point (chain fast path) agrees with an explicit walk
    by_id = index_by_id(path)
    assert build_session_context(path) == context_from_path_reference(path_to_root(by_id, path[-1]))


@pytest.mark.parametrize("seed", range(40))
def test_unique_ids_context_equals_reference_on_random_paths(seed):
    """``unique_ids=True`` (a path from get_branch) searches the compaction's first kept
    entry backwards; with unique ids that is the entry pi's forward search finds."""
    rng = random.Random(500 + seed)
    path = random_path(rng, rng.randint(1, 700))
    assert context_from_path(path, unique_ids=True) == context_from_path_reference(path)


@pytest.mark.parametrize("kept_back", [1, 200, 300, 2_000, 4_999])
@pytest.mark.parametrize("kept", ["on the path", "unknown", "after the compaction"])
def test_unique_ids_compaction_far_back_or_missing(kept_back, kept):
    """The backward search crosses its growing windows, and a first kept id that is not
    before the compaction keeps only the summary and what follows, as pi does."""
    path = [user("u0", None)]
    for i in range(1, 5_000):
        path.append(user(f"u{i}", f"u{i - 1}", text=f"t{i}"))
    first_kept = {
        "on the path": f"u{5_000 - kept_back}",
        "unknown": "nowhere",
        "after the compaction": "u5001",
    }[kept]
    path.append(
        entry("c", "u4999", "compaction", summary="S", firstKeptEntryId=first_kept, tokensBefore=9)
    )
    path.append(user("u5001", "c", text="after"))
    expected = context_from_path_reference(path)
    assert context_from_path(path, unique_ids=True) == expected
    assert context_from_path(path) == expected
    assert build_session_context(path) == expected
    tree = SessionTree(path + [user("side", "u10")])  # a branched list: branch_of_list
    assert tree.get_branch("u5001") == path
    assert context_from_path(tree.get_branch("u5001"), unique_ids=True) == expected
    assert build_session_context(tree.entries, "u5001") == expected
    if kept == "on the path":
        assert len(expected["messages"]) == kept_back + 2


@pytest.mark.parametrize("seed", range(20))
def test_get_branch_paths_have_unique_ids(seed):
    """What lets a get_branch caller pass ``unique_ids=True``: with or without an index,
    and with duplicate ids in the list (pi's map keeps the last one), the path's ids are
    unique and its context is pi's."""
    rng = random.Random(2000 + seed)
    main = random_path(rng, 120, "m")
    side = random_path(rng, 40, "s")
    side[0]["parentId"] = main[rng.randrange(len(main))]["id"]
    es = main + side
    if seed % 2:
        es.append(dict(rng.choice(main[:-1]), parentId=None))  # a duplicate id: index walk
    for leaf in (main[-1]["id"], side[-1]["id"]):
        path = SessionTree(es).get_branch(leaf)
        ids = [e["id"] for e in path]
        assert len(set(ids)) == len(ids)
        expected = context_from_path_reference(path_to_root(index_by_id(es), index_by_id(es)[leaf]))
        assert context_from_path(path, unique_ids=True) == expected


@pytest.mark.parametrize("seed", range(20))
def test_branched_trees_match_reference(seed):
    rng = random.Random(1000 + seed)
    main = random_path(rng, 60, "m")
    side = random_path(rng, 30, "s")
    side[0]["parentId"] = main[rng.randrange(len(main))]["id"]
    es = main + side
    rng.shuffle(es)
    by_id = index_by_id(es)
    for leaf in (main[-1]["id"], side[-1]["id"], side[5]["id"]):
        expected = context_from_path_reference(path_to_root(by_id, by_id[leaf]))
        assert build_session_context(es, leaf) == expected


@pytest.mark.parametrize("side_length", [1, 3, 12, 40, 150])
def test_list_branched_before_its_last_entry_matches_reference(side_length):
    """In list order, leaf last: the newest branch is short or long against the list."""
    rng = random.Random(side_length)
    main = random_path(rng, 200, "m")
    side = random_path(rng, side_length, "s")
    side[0]["parentId"] = main[rng.randrange(len(main) - 1)]["id"]
    es = main + side
    by_id = index_by_id(es)
    for leaf in (UNSET, side[-1]["id"], main[-1]["id"], main[50]["id"]):
        target = es[-1] if leaf is UNSET else by_id[leaf]
        expected = context_from_path_reference(path_to_root(by_id, target))
        assert build_session_context(es, leaf) == expected


@pytest.mark.parametrize("later", ["side branch", "duplicate id", "first parent", "none"])
def test_leaf_inside_the_list_matches_reference(later):
    """Leaf before the list's end: what comes after it may redirect pi's id walk."""
    rng = random.Random(later)
    main = random_path(rng, 80, "m")
    extra = random_path(rng, 12, "x")
    extra[0]["parentId"] = main[30]["id"]
    if later == "duplicate id":
        # pi's index keeps the later one, a root here
        extra[4] = dict(extra[4], id=main[20]["id"], parentId=None)
    elif later == "first parent":
        main[0]["parentId"] = "x7"  # a later entry holds the first entry's parent
        extra[7] = user("x7", None, text="the real root")
    es = main + (extra if later != "none" else [])
    by_id = index_by_id(es)
    for leaf in (main[-1]["id"], main[60]["id"], main[25]["id"], main[0]["id"]):
        expected = context_from_path_reference(path_to_root(by_id, by_id[leaf]))
        assert build_session_context(es, leaf) == expected


def test_messages_are_not_copied():
    es = [user("a", None)]
    assert build_session_context(es)["messages"][0] is es[0]["message"]


def test_bash_execution_text_variants():
    base = {
        "role": "bashExecution",
        "command": "make",
        "output": "",
        "cancelled": False,
        "truncated": False,
    }
    assert bash_execution_to_text({**base, "exitCode": 0}) == "Ran `make`\n(no output)"
    assert (
        bash_execution_to_text({**base, "output": "x", "exitCode": None})
        == "Ran `make`\n```\nx\n```"
    )
    assert (
        bash_execution_to_text({**base, "exitCode": 2})
        == "Ran `make`\n(no output)\n\nCommand exited with code 2"
    )
    assert bash_execution_to_text({**base, "exitCode": 2, "cancelled": True}).endswith(
        "\n\n(command cancelled)"
    )
    assert bash_execution_to_text({**base, "truncated": True}) == "Ran `make`\n(no output)"
    assert bash_execution_to_text({**base, "truncated": True, "fullOutputPath": "/f"}).endswith(
        "\n\n[Output truncated. Full output: /f]"
    )


def test_convert_to_llm_drops_excluded_bash_and_wraps_custom_strings():
    msgs = [
        {
            "role": "bashExecution",
            "command": "c",
            "output": "o",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "excludeFromContext": True,
            "timestamp": 1,
        },
        {"role": "custom", "customType": "t", "content": "hello", "display": True, "timestamp": 2},
        tool_result("t", None)["message"],
        {"role": "unknownRole", "timestamp": 3},
    ]
    out = convert_to_llm(msgs)
    assert out[0] == {
        "role": "user",
        "content": [{"type": "text", "text": "hello"}],
        "timestamp": 2,
    }
    assert out[1] is msgs[2]
    assert len(out) == 2


def test_iso_to_ms_matches_js_date_parsing():
    assert iso_to_ms("2025-06-01T12:00:01.000Z") == 1748779201000
    assert iso_to_ms("2025-06-01T12:00:01.5Z") == 1748779201500
    assert iso_to_ms("2025-06-01T12:00:01.123456Z") == 1748779201123
    assert iso_to_ms("2025-06-01T14:00:01+02:00") == 1748779201000
    assert iso_to_ms("2025-06-01") == 1748736000000
    assert iso_to_ms("1969-12-31T23:59:59.000Z") == -1000
    assert iso_to_ms("2025-02-30T00:00:00Z") is None
    assert iso_to_ms("not a date") is None
    assert iso_to_ms(None) is None


# --- pi 1.6.0's entry types and its own contexts (its 12 session files) -------------------


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


def _pi16_entry(eid, parent, etype="message", **fields):
    return {
        "type": etype,
        "id": eid,
        "parentId": parent,
        "timestamp": "2025-01-01T00:00:00Z",
        **fields,
    }


def _pi16_user(eid, parent, text):
    return _pi16_entry(eid, parent, message={"role": "user", "content": text, "timestamp": 1})


def _pi16_assistant(eid, parent, text):
    content = [{"type": "text", "text": text}]
    return _pi16_entry(
        eid, parent, message={"role": "assistant", "content": content, "timestamp": 2}
    )


def test_context_edit_applies_on_its_own_branch_and_latest_wins():
    entries = [
        _pi16_user("u1", None, "hello"),
        _pi16_assistant("a1", "u1", "long answer"),
        _pi16_entry("e1", "a1", "context_edit", targetId="a1", replacement={"content": "short"}),
        _pi16_entry("e2", "e1", "context_edit", targetId="a1", replacement={"content": "shorter"}),
        _pi16_entry("e3", "a1", "context_edit", targetId="u1", replacement=None),  # other branch
        _pi16_entry("x1", "e2", "usage", usage={"input": 1}),
        _pi16_entry("f1", "x1", "some_future_type", payload=[1, 2]),
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
        _pi16_user("u1", None, "one"),
        _pi16_entry("s1", "u1", message=system),
        _pi16_assistant("a1", "s1", "two"),
        _pi16_entry(
            "c1",
            "a1",
            "compaction",
            summary="sum",
            tokensBefore=9,
            firstKeptEntryId="u1",
            systemMessage={"role": "system", "content": "rules v2", "timestamp": 4},
            usage={"input": 5},
        ),  # fmt: skip
        _pi16_user("u2", "c1", "three"),
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
