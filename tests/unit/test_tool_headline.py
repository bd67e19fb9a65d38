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


def test_headlines_from_a_stored_preview():
    """The tree reads a call's headline from the preview column (`name({json})`), with
    text before it, several calls, and a call cut off by the preview's length."""
    from sessions_app.core.tool_headline import headlines_from_preview

    assert headlines_from_preview('bash({"command": "ls -la"})') == ["$ ls -la"]
    two = 'Let me look. read({"path": "a.py", "offset": 1, "limit": 9}) bash({"command": "make"})'
    assert headlines_from_preview(two) == ["read a.py:1–9", "$ make"]
    cut = 'bash({"command": "pytest -q tests/unit/test_tr'
    assert headlines_from_preview(cut) == ["$ pytest -q tests/unit/test_tr"]
    assert headlines_from_preview('edit({"path": "x.py", "edits": [{"oldText": "a') == ["edit x.py"]
    assert headlines_from_preview("no call here (really)") == []
    assert headlines_from_preview(None) == []


def test_text_before_calls():
    from sessions_app.core.tool_headline import text_before_calls

    assert text_before_calls('Let me look. read({"path": "a.py"})') == "Let me look."
    assert text_before_calls('bash({"command": "ls"})') == ""
    assert text_before_calls("plain words (no call)") == "plain words (no call)"


def test_duration_text():
    from sessions_app.core.tool_headline import duration_text

    assert [duration_text(s) for s in (0.42, 9.96, 12.4, 60, 125, 3725)] == [
        "0.4 s",
        "10.0 s",
        "12 s",
        "1 min",
        "2 min 5 s",
        "1 h 2 min",
    ]
    assert duration_text(None) == duration_text(-1) == duration_text(float("nan")) == ""


def test_an_assistant_message_names_each_of_its_calls_by_id():
    from sessions_app.core.tool_headline import call_headlines

    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Looking."},
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls -la"}},
            {"type": "toolCall", "id": "c2", "name": "write", "arguments": {"path": "h.py"}},
        ],
    }
    assert call_headlines(message) == {"c1": "$ ls -la", "c2": "write h.py"}
    assert call_headlines({"role": "assistant", "content": "just words"}) == {}
    assert call_headlines(None) == {}


def test_a_tool_result_reads_as_the_call_it_answers_from_the_previews_above_it():
    from sessions_app.core.tool_headline import answered_headline

    calls = 'Two. bash({"command": "ls -la"}) read({"path": "a.py"})'
    # the first result right under the message answers its first call, the next its second
    assert answered_headline([("assistant", calls)]) == "$ ls -la"
    assert answered_headline([("toolResult", "x"), ("assistant", calls)]) == "read a.py"
    # a third result has no call left; a result under a user message answers nothing
    assert answered_headline([("toolResult", "x")] * 2 + [("assistant", calls)]) == ""
    assert answered_headline([("user", "hi")]) == ""
    assert answered_headline([]) == ""
    # a run of results longer than any message's calls stops the walk
    assert answered_headline(iter([("toolResult", "x")] * 1000)) == ""
