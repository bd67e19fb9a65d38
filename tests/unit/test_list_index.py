"""The one-pass list index (sessions_app.core.list_index) against pi's walk over an id map."""

from __future__ import annotations

import random

import pytest

from sessions_app.core.list_index import ListIndex
from sessions_app.core.messages import build_session_context, context_from_path_reference
from sessions_app.core.tree import SessionTree, TreeCycleError, index_by_id, path_to_root
from tests.support.context_entries import entry, random_path, user


def branched(rng: random.Random, branches: int, shuffle: bool) -> list[dict]:
    """A main path and ``branches`` side paths, each leaving an earlier path anywhere."""
    paths = [random_path(rng, 60, "m")]
    for b in range(branches):
        side = random_path(rng, rng.randint(1, 30), f"s{b}_")
        source = rng.choice(paths)
        side[0]["parentId"] = source[rng.randrange(len(source))]["id"]
        paths.append(side)
    es = [e for path in paths for e in path]
    if shuffle:
        rng.shuffle(es)  # parents after their children, runs of one entry
    return es


@pytest.mark.parametrize("seed", range(24))
def test_paths_and_contexts_equal_the_id_walk(seed):
    """Every entry as the leaf: the runs give pi's path, and the context is pi's; with
    up to 12 branch points (past 4 the lookups use a position map) and shuffled lists."""
    rng = random.Random(seed)
    es = branched(rng, branches=seed % 13, shuffle=seed % 3 == 0)
    index = ListIndex.build(es)
    assert index is not None
    by_id = index_by_id(es)
    for e in es:
        expected = path_to_root(by_id, e)
        runs = index.runs(index.position(e["id"]))
        assert runs is not None
        assert index.branch(runs) == expected
        path, messages, specials = index.columns(runs)
        assert path == expected
        assert specials == [i for i, x in enumerate(path) if x["type"] != "message"]
        assert all(
            messages[i] is x["message"] for i, x in enumerate(path) if x["type"] == "message"
        )
        context = context_from_path_reference(expected)
        assert build_session_context(es, e["id"]) == context
        assert build_session_context(es, e["id"], list_index=index) == context
        assert SessionTree(es).get_branch(e["id"]) == expected


def test_each_entry_is_read_once_per_key():
    """The index is one pass: id, parentId, type and message read once each per entry."""
    reads = [0]

    class Counted(dict):
        def __getitem__(self, key):
            reads[0] += 1
            return super().__getitem__(key)

    es = [Counted(e) for e in random_path(random.Random(7), 500)]
    assert ListIndex.build(es) is not None
    assert reads[0] == 3 * len(es) + sum(e.get("type") == "message" for e in es)


@pytest.mark.parametrize(
    "change",
    ["duplicate id", "None id", "empty id", "zero id", "false id", "missing id", "list id"],
)
def test_ids_that_do_not_allow_runs_give_no_index(change):
    """Where a duplicate could redirect pi's walk (its map keeps the last entry with an
    id), or a falsy id would stop it, there is no index; the callers walk an id map."""
    es = random_path(random.Random(3), 20)
    value = {
        "duplicate id": es[4]["id"],
        "None id": None,
        "empty id": "",
        "zero id": 0,
        "false id": False,
        "list id": ["m"],
    }.get(change)
    if change == "missing id":
        del es[9]["id"]
    else:
        es[9] = dict(es[9], id=value)
    assert ListIndex.build(es) is None
    if change == "duplicate id":
        by_id = index_by_id(es)
        expected = context_from_path_reference(path_to_root(by_id, es[-1]))
        assert build_session_context(es) == expected


def test_a_loop_gives_no_runs_and_the_walk_reports_it():
    es = [user("a", "c"), user("b", "a"), user("c", "b"), user("d", None)]
    index = ListIndex.build(es)
    assert index is not None
    assert index.runs(2) is None
    with pytest.raises(TreeCycleError):
        build_session_context(es, "c")
    with pytest.raises(TreeCycleError):
        SessionTree(es).get_branch("c")


def test_unknown_ids_and_dangling_parents():
    es = [user("a", "gone"), user("b", "a"), entry("c", "b", "label", targetId="a", label="L")]
    index = ListIndex.build(es)
    assert index is not None
    assert index.position("nowhere") == -1
    assert index.position(["unhashable"]) == -1
    assert index.runs(2) == [(0, 3)]  # a dangling parent ends the path, as in pi
    assert SessionTree(es).get_branch("nowhere") == []
    assert build_session_context(es, "nowhere") == context_from_path_reference(es)
