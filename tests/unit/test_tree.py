"""Tree index, path walking, validation, navigation and fork (sessions_app.core.tree)."""

from __future__ import annotations

import pytest

from sessions_app.core.messages import build_session_context
from sessions_app.core.tree import (
    SessionTree,
    TreeCycleError,
    TreeError,
    compact_tree,
    index_by_id,
    iter_tree,
    path_to_root,
    validate_entries,
)
from tests.support.context_entries import assistant, entry, user


def chain(n, prefix="e"):
    out = [user(f"{prefix}0", None)]
    for i in range(1, n):
        out.append(
            assistant(f"{prefix}{i}", f"{prefix}{i - 1}")
            if i % 2
            else user(f"{prefix}{i}", f"{prefix}{i - 1}")
        )
    return out


def test_path_to_root_follows_parents_root_first():
    es = chain(5)
    assert [e["id"] for e in path_to_root(index_by_id(es), es[3])] == ["e0", "e1", "e2", "e3"]


def test_two_entry_cycle_raises_instead_of_hanging():
    es = [user("a", "b"), user("b", "a")]
    with pytest.raises(TreeCycleError) as exc:
        path_to_root(index_by_id(es), es[0])
    assert set(exc.value.cycle_ids) == {"a", "b"}
    assert "loops" in str(exc.value)


def test_self_parent_is_a_cycle_for_path_walking():
    es = [user("a", "a")]
    with pytest.raises(TreeCycleError):
        build_session_context(es)


class CountedReads(dict):
    """An entry that counts every read of its keys (in `reads`, shared by all entries), so
    a test can say a walk is linear by the work it does rather than by a clock."""

    reads = [0]

    def __getitem__(self, key):
        self.reads[0] += 1
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.reads[0] += 1
        return super().get(key, default)


def counted(entries: list[dict]) -> list[CountedReads]:
    CountedReads.reads[0] = 0
    return [CountedReads(e) for e in entries]


def test_long_cycle_detected_in_linear_work():
    n = 100_000
    es = counted([user(f"n{i}", f"n{(i + 1) % n}") for i in range(n)])
    with pytest.raises(TreeCycleError):
        build_session_context(es)
    assert CountedReads.reads[0] < 20 * n  # a quadratic walk would read n * n times


def test_cycle_below_a_valid_tail_detected():
    es = [user("a", "b"), user("b", "a"), user("c", "a"), user("d", "c")]
    with pytest.raises(TreeCycleError):
        SessionTree(es).get_branch("d")


def test_dangling_parent_stops_the_walk():
    es = [user("a", None), user("b", "missing"), user("c", "b")]
    assert [e["id"] for e in SessionTree(es).get_branch("c")] == ["b", "c"]


def test_get_branch_unknown_id_is_empty():
    assert SessionTree(chain(3)).get_branch("nope") == []


def test_validate_reports_every_problem_kind():
    es = [
        user("a", None),
        user("b", None),  # second root
        user("a", "b"),  # duplicate id
        user("c", "zzz"),  # dangling
        user("d", "d"),  # self parent
        user("x", "y"),
        user("y", "x"),  # cycle
        {"type": "message", "parentId": None, "timestamp": "t"},  # missing id
    ]
    kinds = {p.kind for p in validate_entries(es)}
    assert kinds == {
        "multiple-roots",
        "duplicate-id",
        "dangling-parent",
        "self-parent",
        "cycle",
        "missing-id",
    }
    dup = next(p for p in validate_entries(es) if p.kind == "duplicate-id")
    assert dup.index == 2 and dup.entry_id == "a"


def test_validate_clean_tree_has_no_problems():
    es = chain(10)
    es.append(user("branch", "e3"))
    assert validate_entries(es) == []


def test_validate_is_linear_on_long_chain():
    n = 50_000
    es = counted(chain(n))
    assert validate_entries(es) == []
    assert CountedReads.reads[0] < 20 * n  # a quadratic check would read n * n times


def test_get_tree_orphans_and_multiple_roots_become_roots():
    es = [user("a", None), user("b", "a"), user("c", "gone"), user("d", None)]
    roots = compact_tree(SessionTree(es).get_tree())
    assert [r["id"] for r in roots] == ["a", "c", "d"]
    assert roots[0]["children"][0]["id"] == "b"


def test_get_tree_children_sorted_by_timestamp_stably():
    es = [
        user("r", None, ms=0),
        user("late", "r", ms=5000),
        user("early", "r", ms=1000),
        user("tie1", "r", ms=3000),
        user("tie2", "r", ms=3000),
    ]
    tree = compact_tree(SessionTree(es).get_tree())
    assert [c["id"] for c in tree[0]["children"]] == ["early", "tie1", "tie2", "late"]


def test_labels_set_and_cleared_with_timestamp():
    es = chain(3)
    es.append(entry("l1", "e2", "label", ms=10_000, targetId="e1", label="first"))
    es.append(entry("l2", "l1", "label", ms=11_000, targetId="e0", label="root"))
    es.append(entry("l3", "l2", "label", ms=12_000, targetId="e0"))  # label absent = removed
    tree = SessionTree(es)
    assert tree.get_label("e1") == "first"
    assert tree.get_label("e0") is None
    node = compact_tree(tree.get_tree())[0]["children"][0]
    assert node == {
        "id": "e1",
        "label": "first",
        "labelTimestamp": es[3]["timestamp"],
        "children": node["children"],
    }


def test_session_name_is_last_non_empty():
    es = chain(2)
    es.append(entry("s1", "e1", "session_info", name="one"))
    es.append(entry("s2", "s1", "session_info", name=""))
    assert SessionTree(es).session_name == "one"
    assert SessionTree(chain(2)).session_name is None


def test_deep_tree_and_iteration_do_not_recurse():
    es = chain(60_000)
    roots = SessionTree(es).get_tree()
    depth = max(d for _, d in iter_tree(roots))
    assert depth == 59_999
    compact = compact_tree(roots)
    assert compact[0]["id"] == "e0"


def test_common_ancestor_and_collect_entries():
    es = chain(4)  # e0..e3
    es += [assistant("x4", "e1"), user("x5", "x4")]
    tree = SessionTree(es)
    assert tree.common_ancestor("e3", "x5") == "e1"
    got = tree.collect_entries_for_branch_summary("e3", "x5")
    assert [e["id"] for e in got["entries"]] == ["e2", "e3"]
    assert got["commonAncestorId"] == "e1"
    assert tree.collect_entries_for_branch_summary(None, "x5") == {
        "entries": [],
        "commonAncestorId": None,
    }
    # unknown target: nothing in common, the whole old path is collected
    assert [e["id"] for e in tree.collect_entries_for_branch_summary("e3", "zz")["entries"]] == [
        "e0",
        "e1",
        "e2",
        "e3",
    ]


def test_navigate_target_user_message_goes_to_parent_with_text():
    es = chain(3)
    es.append(
        entry(
            "u9",
            "e2",
            message={
                "role": "user",
                "content": [
                    {"type": "text", "text": "edit "},
                    {"type": "image", "data": "x"},
                    {"type": "text", "text": "me"},
                ],
            },
        )
    )
    tree = SessionTree(es)
    assert tree.navigate_target("u9") == {"leafId": "e2", "editorText": "edit me"}
    assert tree.navigate_target("e0") == {"leafId": None, "editorText": "hi"}


def test_navigate_target_custom_message_and_other_entries():
    es = chain(2)
    es.append(entry("cm", "e1", "custom_message", customType="t", content="note", display=True))
    es.append(entry("mc", "cm", "model_change", provider="p", modelId="m"))
    tree = SessionTree(es)
    assert tree.navigate_target("cm") == {"leafId": "e1", "editorText": "note"}
    assert tree.navigate_target("e1") == {"leafId": "e1", "editorText": None}
    assert tree.navigate_target("mc") == {"leafId": "mc", "editorText": None}
    with pytest.raises(TreeError):
        tree.navigate_target("missing")


def test_create_branched_session_path_only_with_labels_recreated():
    es = chain(4)
    es.append(entry("l1", "e3", "label", targetId="e1", label="keep"))
    es.append(user("other", "e1"))
    es.append(entry("l2", "other", "label", targetId="other", label="drop"))
    tree = SessionTree(es)
    ids = iter(["n1", "n2"])
    out = tree.create_branched_session(
        "l1",
        cwd="/w",
        parent_session="sess-1",
        session_id="new",
        now="2030-01-01T00:00:00.000Z",
        id_generator=lambda taken: next(ids),
    )
    assert out["header"] == {
        "type": "session",
        "version": 3,
        "id": "new",
        "timestamp": "2030-01-01T00:00:00.000Z",
        "cwd": "/w",
        "parentSession": "sess-1",
    }
    assert [e["id"] for e in out["entries"]] == ["e0", "e1", "e2", "e3", "n1"]
    label = out["entries"][-1]
    assert label["parentId"] == "e3" and label["targetId"] == "e1" and label["label"] == "keep"
    assert label["timestamp"] == es[4]["timestamp"]
    assert out["leafId"] == "n1"
    with pytest.raises(TreeError):
        tree.create_branched_session("nope")


def test_create_branched_session_default_ids_are_unique_hex():
    es = chain(3)
    es += [
        entry(f"l{i}", "e2" if i == 0 else f"l{i - 1}", "label", targetId=f"e{i}", label=f"L{i}")
        for i in range(3)
    ]
    out = SessionTree(es).create_branched_session("e2")
    new_ids = [e["id"] for e in out["entries"][3:]]
    assert len(set(new_ids)) == 3 and all(len(i) == 8 for i in new_ids)
    assert "parentSession" not in out["header"]
