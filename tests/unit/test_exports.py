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
        "headline": "", "preview": "p", "label": "L", "onBranch": False, "children": 0,
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


def _calls_then_results():
    from tests.support.context_entries import assistant, tool_result, user

    call = assistant(
        "a2",
        "u1",
        text="Let me look.",
        tool_calls=[("bash", {"command": "ls -la"}), ("read", {"path": "a.py", "limit": 9})],
    )
    first = tool_result("r3", "a2", text="total 0")
    first["message"]["toolCallId"] = "a2-t0"
    second = tool_result("r4", "r3", text="print(1)")
    second["message"]["toolCallId"] = "a2-t1"
    return [user("u1", None, "look around"), call, first, second]


def test_static_tree_rows_read_a_call_and_its_results_by_the_one_headline():
    rows = {r["id"]: r for r in tree_rows(_calls_then_results())}
    assert rows["a2"]["headline"] == "$ ls -la · read a.py:1–9"
    assert rows["a2"]["preview"] == "Let me look."  # its words; the headline says the rest
    assert rows["r3"]["headline"] == "$ ls -la"
    assert rows["r4"]["headline"] == "read a.py:1–9"
    assert rows["r4"]["preview"] == "print(1)"
    assert rows["u1"]["headline"] == ""


def test_markdown_names_the_call_a_result_answers_and_no_call_id():
    md = branch_markdown({"id": "s1", "cwd": "/w"}, _calls_then_results(), title="T")
    assert "**Tool call** `$ ls -la`" in md
    assert "### Result of `$ ls -la` · `r3`" in md
    assert "### Result of `read a.py:1–9` · `r4`" in md
    assert "a2-t0" not in md and "a2-t1" not in md
