"""session_tree.json: SessionManager tree queries and createBranchedSession."""

from __future__ import annotations

import pytest

from sessions_app.core.messages import build_session_context
from sessions_app.core.tree import SessionTree, compact_tree

from ._cases import golden_params, require_case


def _tree(case):
    inp = case["input"]
    return SessionTree(inp["entries"], leaf_id=inp["leafId"])


@pytest.mark.parametrize("case", golden_params("session_tree.json"))
def test_get_tree(case):
    case = require_case("session_tree.json", case)
    assert compact_tree(_tree(case).get_tree()) == case["output"]["getTree"]


@pytest.mark.parametrize("case", golden_params("session_tree.json"))
def test_branches_labels_name_children(case):
    case = require_case("session_tree.json", case)
    tree = _tree(case)
    out = case["output"]
    got_branches = [[e["id"] for e in tree.get_branch(i)] for i in case["input"]["branchFromIds"]]
    assert got_branches == out["getBranch"]
    assert [e["id"] for e in tree.get_branch()] == out["getBranchDefault"]
    labels = {
        e["id"]: tree.get_label(e["id"])
        for e in case["input"]["entries"]
        if tree.get_label(e["id"])
    }
    assert labels == out["labels"]
    assert tree.session_name == out["sessionName"]
    root_id = case["input"]["entries"][0]["id"]
    assert [e["id"] for e in tree.get_children(root_id)] == out["getChildrenOfRoot"]


@pytest.mark.parametrize("case", golden_params("session_tree.json"))
def test_create_branched_session(case):
    case = require_case("session_tree.json", case)
    inp = case["input"]
    tree = _tree(case)
    counter = iter(range(1, 10_000))

    def gen(taken):
        return f"L{next(counter)}"

    result = tree.create_branched_session(
        inp["createBranchedSessionFrom"], now=inp["now"], id_generator=gen, cwd="/tmp"
    )
    expected = case["output"]["createBranchedSession"]
    assert result["entries"] == expected["entries"]
    assert result["leafId"] == expected["leafId"]
    assert build_session_context(result["entries"], result["leafId"]) == expected["context"]
    assert result["header"]["version"] == 3
