"""Pure export helpers (sessions_app.core.exports): tree rows, Markdown of a branch."""

from sessions_app.core.exports import branch_markdown, tree_rows


def entry(i, parent, role="user", text="hi", ts=None, **message):
    content = text if role == "user" else [{"type": "text", "text": text}]
    return {
        "type": "message",
        "id": i,
        "parentId": parent,
        "timestamp": ts or f"2026-01-01T00:00:{len(i):02d}.000Z",
        "message": {"role": role, "content": content, **message},
    }


def sample():
    return [
        entry("a", None),
        entry("b", "a", "assistant", "one", ts="2026-01-01T00:00:01.000Z"),
        entry("c", "b", "user", "two", ts="2026-01-01T00:00:02.000Z"),
        entry("d", "a", "assistant", "other", ts="2026-01-01T00:00:03.000Z"),
        entry("e", "d", "user", "more", ts="2026-01-01T00:00:04.000Z"),
    ]


def test_tree_rows_indent_only_at_forks():
    rows = tree_rows(sample(), branch_ids=["a", "d", "e"])
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
        entry("a", None, "user", "see ```code```"),
        entry("b", "a", "toolResult", "x```y", toolName="read"),
    ]
    md = branch_markdown({"id": "s1", "cwd": "/w"}, path, title="T")
    assert md.startswith("# T\n")
    assert "````\nx```y\n````" in md
    assert "- Working directory: `/w`" in md
