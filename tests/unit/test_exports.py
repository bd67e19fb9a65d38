"""Pure export helpers (sessions_app.core.exports): tree rows, Markdown of a branch."""

from sessions_app.core.exports import branch_markdown, tree_rows
from tests.support.context_entries import turn, two_branches


def test_tree_rows_indent_only_at_forks():
    rows = tree_rows(two_branches(), branch_ids=["a", "d", "e"])
    assert [(r["id"], r["depth"], r["onBranch"]) for r in rows] == [
        ("a", 0, True),
        ("b", 1, False),
        ("c", 1, False),
        ("d", 1, True),
        ("e", 1, True),
    ]
    light = [
        {
            "id": "x",
            "parentId": None,
            "timestamp": "",
            "type": "message",
            "_role": "user",
            "_preview": "p",
        }
    ]
    assert tree_rows(light, labels={"x": "L"})[0] | {} == {
        "id": "x", "parentId": None, "depth": 0, "type": "message", "role": "user",
        "preview": "p", "label": "L", "onBranch": False, "children": 0,
    }  # fmt: skip


def test_markdown_fences_survive_backticks():
    path = [
        turn("a", None, "user", "see ```code```"),
        turn("b", "a", "toolResult", "x```y", toolName="read"),
    ]
    md = branch_markdown({"id": "s1", "cwd": "/w"}, path, title="T")
    assert md.startswith("# T\n")
    assert "````\nx```y\n````" in md
    assert "- Working directory: `/w`" in md
