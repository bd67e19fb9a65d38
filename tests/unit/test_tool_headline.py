"""core/tool_headline.py: a tool call reads as what it did."""

import pytest

from sessions_app.core.tool_headline import MAX_CHARS, tool_headline


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("bash", {"command": "ls -la"}, "$ ls -la"),
        ("bash", {"command": "\n  cd src\nmake test\n"}, "$ cd src …"),
        ("read", {"path": "src/app.py"}, "read src/app.py"),
        ("read", {"path": "src/app.py", "offset": 1, "limit": 120}, "read src/app.py:1–120"),
        ("read", {"path": "a.py", "offset": 40}, "read a.py:40–"),
        ("read", {"path": "a.py", "limit": 10}, "read a.py:1–10"),
        (
            "edit",
            {"path": "src/app.py", "edits": [{"oldText": "x = 1", "newText": "x = 2\ny = 3"}]},
            "edit src/app.py +2 −1",
        ),
        (
            "edit",
            {"path": "a.py", "edits": '[{"oldText": "a\\nb", "newText": ""}]'},
            "edit a.py +0 −2",
        ),
        ("edit", {"path": "a.py", "oldText": "a", "newText": "b\nc\nd\ne"}, "edit a.py +4 −1"),
        ("write", {"path": "hello.py", "content": "print(1)"}, "write hello.py"),
        ("grep", {"pattern": "TODO", "path": "src"}, "grep TODO in src"),
        ("find", {"pattern": "*.py"}, "find *.py"),
        ("ls", {}, "ls ."),
        ("web_fetch", {"url": "https://example.test/"}, "web_fetch https://example.test/"),
        ("custom", {"n": 3}, "custom"),
        (None, None, "tool"),
        ("bash", "not a dict", "$"),
    ],
)
def test_headlines(name, arguments, expected):
    assert tool_headline(name, arguments) == expected


def test_a_long_headline_is_cut_to_one_bounded_line():
    line = tool_headline("bash", {"command": "echo " + "x" * 1000})
    assert len(line) == MAX_CHARS and line.endswith("…") and "\n" not in line
