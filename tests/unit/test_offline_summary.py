"""Offline extractive summarizer: sections, label, extraction rules, merging, bounds."""

from __future__ import annotations

import re

import pytest

from sessions_app.core.offline_summary import (
    OFFLINE_LABEL,
    parse_summary,
    summarize_offline,
)
from tests.support.context_entries import SUMMARY_HEADINGS


def user(text):
    return {"role": "user", "content": text, "timestamp": 1}


def assistant(*blocks, stop="stop", **extra):
    content = [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks]
    return {"role": "assistant", "content": content, "stopReason": stop, **extra}


def call(call_id, name, **arguments):
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def result(call_id, name, text, is_error=False):
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
    }


def section(text, heading):
    """Lines under ``heading`` up to the next heading of the same or higher level."""
    level = heading.split(" ")[0]
    lines = text.split("\n")
    start = lines.index(heading) + 1
    out = []
    for line in lines[start:]:
        if line.startswith("#") and len(line.split(" ")[0]) <= len(level):
            break
        if line.startswith("#"):
            break
        if line.strip():
            out.append(line)
    return out


CONVERSATION = [
    user(
        "Add a --json flag to the CLI in src/cli.py. Don't add new dependencies. I prefer small commits."
    ),
    assistant(
        {"type": "thinking", "thinking": "Let me look first."},
        "I'll read the CLI module first.",
        call("c1", "read", path="src/cli.py"),
        stop="toolUse",
    ),
    result("c1", "read", "import argparse\n"),
    assistant(
        "I decided to use json.dumps instead of a new library because no dependencies are allowed.",
        call("c2", "edit", path="src/cli.py", oldText="a", newText="b"),
        call("c3", "bash", command="pytest -q"),
        stop="toolUse",
    ),
    result("c2", "edit", "Successfully replaced text in src/cli.py."),
    result(
        "c3",
        "bash",
        "FAILED tests/test_cli.py::test_json - AssertionError\n1 failed\n\nCommand exited with code 1",
        True,
    ),
    assistant("The test fails because the output ends with a newline."),
    {
        "role": "bashExecution",
        "command": "make lint",
        "output": "lint.py:3: error: bad style\n",
        "exitCode": 2,
        "cancelled": False,
        "truncated": False,
    },
    user("Please fix the failing test and update README.md too"),
]


def test_sections_present_in_order_and_label_first():
    text = summarize_offline(CONVERSATION)
    assert text.split("\n")[0] == OFFLINE_LABEL
    assert "without a language model" in text.split("\n")[0]
    positions = [text.index(h + "\n") for h in SUMMARY_HEADINGS]
    assert positions == sorted(positions)


def test_branch_kind_has_five_sections():
    text = summarize_offline(CONVERSATION, kind="branch")
    assert text.startswith(OFFLINE_LABEL)
    for heading in SUMMARY_HEADINGS[:-1]:
        assert heading + "\n" in text
    assert "## Critical Context" not in text
    assert [ln for ln in text.split("\n") if ln.startswith("## ")] == [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "## Key Decisions",
        "## Next Steps",
    ]


def test_bad_kind():
    with pytest.raises(ValueError):
        summarize_offline([], kind="other")


def test_goal_from_user_requests_ack_skipped():
    text = summarize_offline([*CONVERSATION, user("ok"), user("thanks!")])
    goal = section(text, "## Goal")
    assert goal[0].startswith("- Add a --json flag to the CLI in src/cli.py.")
    assert goal[1] == "- Please fix the failing test and update README.md too"
    assert len(goal) == 2


def test_constraints_from_user_phrasing():
    constraints = section(summarize_offline(CONVERSATION), "## Constraints & Preferences")
    assert constraints == ["- Don't add new dependencies.", "- I prefer small commits."]


def test_done_from_successful_tool_results():
    done = section(summarize_offline(CONVERSATION), "### Done")
    assert done == ["- [x] Read src/cli.py", "- [x] Edited src/cli.py"]


def test_blocked_from_errors_and_exit_codes():
    messages = [
        *CONVERSATION,
        assistant("", stop="error", errorMessage="429 rate limited\nretry later"),
    ]
    blocked = section(summarize_offline(messages), "### Blocked")
    assert blocked == [
        "- `pytest -q` failed: FAILED tests/test_cli.py::test_json - AssertionError",
        "- user command `make lint` exited with code 2: lint.py:3: error: bad style",
        "- Assistant turn failed: 429 rate limited",
    ]
    # a later successful turn clears the provider error
    recovered = summarize_offline([*messages, assistant("Back online.")])
    assert not any("Assistant turn failed" in b for b in section(recovered, "### Blocked"))


def test_bash_result_with_nonzero_exit_text_is_blocked_even_without_is_error():
    messages = [
        user("run the build"),
        assistant(call("b1", "bash", command="make"), stop="toolUse"),
        result("b1", "bash", "make: *** [all] Error 2\n\nCommand exited with code 2"),
    ]
    text = summarize_offline(messages)
    assert section(text, "### Blocked") == ["- `make` failed: make: *** [all] Error 2"]
    assert section(text, "### Done") == ["- (none)"]


def test_failure_fixed_by_a_later_identical_call_is_not_blocked():
    messages = [
        user("run tests"),
        assistant(call("t1", "bash", command="pytest"), stop="toolUse"),
        result("t1", "bash", "1 failed\nCommand exited with code 1", True),
        assistant(call("t2", "bash", command="pytest"), stop="toolUse"),
        result("t2", "bash", "5 passed"),
        assistant("All green."),
    ]
    text = summarize_offline(messages)
    assert section(text, "### Blocked") == ["- (none)"]
    assert section(text, "### Done") == ["- [x] Ran `pytest` -> 5 passed"]
    assert section(text, "## Next Steps") == ["- (none)"]


def test_next_steps_from_last_unanswered_request():
    steps = section(summarize_offline(CONVERSATION), "## Next Steps")
    assert (
        steps[0]
        == "1. Answer the open request: Please fix the failing test and update README.md too"
    )
    assert any("Resolve:" in s and "pytest -q" in s for s in steps)


def test_answered_request_is_not_a_next_step():
    messages = [user("What does main.py do?"), assistant("It starts the server.")]
    text = summarize_offline(messages)
    assert section(text, "## Next Steps") == ["- (none)"]
    assert "Latest assistant reply: It starts the server." in text


def test_pending_tool_call_is_in_progress():
    messages = [
        user("Create docs/intro.md"),
        assistant(call("w1", "write", path="docs/intro.md", content="# Intro"), stop="toolUse"),
    ]
    text = summarize_offline(messages)
    in_progress = section(text, "### In Progress")
    assert "- [ ] Writing docs/intro.md (no result yet)" in in_progress
    assert "- [ ] Working on: Create docs/intro.md" in in_progress
    assert "1. Answer the open request: Create docs/intro.md" in section(text, "## Next Steps")


def test_aborted_run_is_in_progress():
    messages = [user("refactor utils"), assistant("Starting.", stop="aborted")]
    in_progress = section(summarize_offline(messages), "### In Progress")
    assert any("stopped before it finished" in line for line in in_progress)


def test_key_decisions_from_assistant_text():
    decisions = section(summarize_offline(CONVERSATION), "## Key Decisions")
    assert (
        "- I decided to use json.dumps instead of a new library because no dependencies are allowed."
        in decisions
    )
    assert "- The test fails because the output ends with a newline." in decisions
    # thinking is private and not mined
    assert not any("Let me look first" in d for d in decisions)


def test_critical_context_lists_files():
    critical = section(summarize_offline(CONVERSATION), "## Critical Context")
    assert critical[0] == "- Files modified: src/cli.py"
    assert "- Mentioned by the user: README.md" in critical
    reads = [
        user("look at a.py"),
        assistant(call("r1", "read", path="a.py"), call("r2", "read", path="b.py"), stop="toolUse"),
        result("r1", "read", "x"),
        result("r2", "read", "y"),
        assistant(call("e1", "edit", path="b.py", oldText="y", newText="z"), stop="toolUse"),
        result("e1", "edit", "ok"),
        assistant("Done."),
    ]
    critical = section(summarize_offline(reads), "## Critical Context")
    assert critical[:2] == ["- Files modified: b.py", "- Files read: a.py"]


def test_paths_mentioned_by_the_user():
    text = summarize_offline(
        [
            user(
                "Compare ./setup.cfg, ~/notes/todo.txt, /etc/hosts and lib/util.ts with main.py. "
                "Use it and/or skip it, see https://example.com/docs/page and version 1.2.3."
            )
        ]
    )
    mentioned = [
        line.split(": ", 1)[1]
        for line in section(text, "## Critical Context")
        if line.startswith("- Mentioned by the user: ")
    ]
    assert mentioned == ["./setup.cfg", "~/notes/todo.txt", "/etc/hosts", "lib/util.ts", "main.py"]


def test_other_message_kinds():
    messages = [
        user("go"),
        {
            "role": "custom",
            "customType": "todo",
            "content": "Remember the migration\nsecond line",
            "display": True,
        },
        {
            "role": "bashExecution",
            "command": "ls",
            "output": "a\nb",
            "exitCode": 0,
            "cancelled": False,
        },
        {
            "role": "bashExecution",
            "command": "sleep 100",
            "output": "",
            "exitCode": None,
            "cancelled": True,
        },
        {
            "role": "bashExecution",
            "command": "secret",
            "output": "",
            "exitCode": 0,
            "excludeFromContext": True,
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and check this screenshot"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            ],
        },
    ]
    text = summarize_offline(messages)
    assert "- Note (todo): Remember the migration" in text
    assert "- [x] User ran `ls` -> b" in text
    assert "- user command `sleep 100` was cancelled" in text
    assert "secret" not in text
    assert "- and check this screenshot" in section(text, "## Goal")


def test_merge_with_previous_summary_keeps_old_and_adds_new():
    first = summarize_offline(CONVERSATION)
    later = [
        assistant(call("c9", "bash", command="pytest -q"), stop="toolUse"),
        result("c9", "bash", "3 passed"),
        assistant(call("c10", "edit", path="README.md", oldText="a", newText="b"), stop="toolUse"),
        result("c10", "edit", "ok"),
        assistant("Fixed the test and updated the README."),
    ]
    merged = summarize_offline(later, previous_summary=first)
    assert merged.split("\n")[0] == OFFLINE_LABEL
    assert merged.count(OFFLINE_LABEL) == 1
    done = section(merged, "### Done")
    assert done == [
        "- [x] Read src/cli.py",
        "- [x] Edited src/cli.py",
        "- [x] Ran `pytest -q` -> 3 passed",
        "- [x] Edited README.md",
    ]
    # earlier goal, constraints and decisions are kept
    assert section(merged, "## Goal") == section(first, "## Goal")
    assert section(merged, "## Constraints & Preferences") == section(
        first, "## Constraints & Preferences"
    )
    assert section(first, "## Key Decisions")[0] in section(merged, "## Key Decisions")
    # the pytest failure was fixed later; the lint failure is still open
    blocked = section(merged, "### Blocked")
    assert blocked == ["- user command `make lint` exited with code 2: lint.py:3: error: bad style"]
    # the open request was answered
    steps = section(merged, "## Next Steps")
    assert not any("Answer the open request" in s for s in steps)
    critical = section(merged, "## Critical Context")
    assert critical[0] == "- Files modified: src/cli.py, README.md"
    assert critical[-1] == "- Latest assistant reply: Fixed the test and updated the README."


def test_previous_summary_round_trips():
    first = summarize_offline(CONVERSATION, custom_focus="tests")
    again = summarize_offline([], previous_summary=first, custom_focus="tests")
    assert again == first
    big = [user(f"task {i}") for i in range(30)]
    trimmed = summarize_offline(big)
    assert "more not shown" in trimmed
    reparsed = summarize_offline([], previous_summary=trimmed)
    assert "- (" not in "\n".join(section(reparsed, "## Goal")[:-1])


def test_merge_with_free_text_previous_summary():
    merged = summarize_offline(
        [user("next task: add logging")], previous_summary="We set up the repo and CI."
    )
    assert "- Earlier summary: We set up the repo and CI." in section(merged, "## Critical Context")
    assert "- next task: add logging" in section(merged, "## Goal")


def test_summary_messages_in_the_list_are_merged():
    prior = summarize_offline(CONVERSATION)
    messages = [
        {"role": "compactionSummary", "summary": prior, "tokensBefore": 1000, "timestamp": 1},
        user("now add a --yaml flag"),
    ]
    text = summarize_offline(messages)
    goal = section(text, "## Goal")
    assert goal[0].startswith("- Add a --json flag")
    assert goal[-1] == "- now add a --yaml flag"
    framed = {
        "role": "user",
        "content": "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
        + prior
        + "</summary>",
    }
    text = summarize_offline([framed])
    assert section(text, "## Goal")[0].startswith("- Add a --json flag")


def test_parse_model_written_summary():
    model_text = """## Goal
Build the importer.

## Constraints & Preferences
- Keep ids

## Progress
### Done
- [x] Parser written
### In Progress
- [ ] Migration
### Blocked
- (none)

## Key Decisions
- **SQLite**: simplest

## Next Steps
1. Write tests

## Critical Context
- Files modified: a.py, b.py

<read-files>
c.py
</read-files>
"""
    data = parse_summary(model_text)
    assert data.goal == ["Build the importer."]
    assert data.constraints == ["Keep ids"]
    assert data.done == ["Parser written"]
    assert data.in_progress == ["Migration"]
    assert data.blocked == []
    assert data.decisions == ["SQLite: simplest"]
    assert data.next_steps == ["Write tests"]
    assert data.files_modified == ["a.py", "b.py"]
    assert data.files_read == ["c.py"]


def test_custom_focus_is_shown():
    text = summarize_offline(CONVERSATION, custom_focus="the README work")
    assert text.split("\n")[1] == "Requested focus: the README work"


def test_deterministic():
    assert summarize_offline(CONVERSATION) == summarize_offline(CONVERSATION)


def test_bounded_output():
    messages = []
    for i in range(400):
        messages.append(
            user(f"Request number {i}: you must never touch file_{i}.py " + "word " * 60)
        )
        messages.append(
            assistant(
                f"I'll handle request {i} because it matters. " + "detail " * 60,
                call(f"x{i}", "read", path=f"f{i}.py"),
                stop="toolUse",
            )
        )
        messages.append(result(f"x{i}", "read", "content"))
    text = summarize_offline(messages, max_chars=4000)
    assert len(text) <= 4000
    assert text.startswith(OFFLINE_LABEL)
    for heading in SUMMARY_HEADINGS:
        assert heading + "\n" in text
    # the original goal survives trimming, and the most recent work is kept
    assert "Request number 0:" in text
    assert "Read f399.py" in text
    default = summarize_offline(messages)
    assert len(default) <= 6000
    assert re.search(r"\(\d+ more not shown\)", default)


def test_focus_keeps_matching_items_when_trimming():
    messages = [user("start")]
    for i in range(40):
        path = "docs/special.md" if i == 3 else f"src/m{i}.py"
        messages.append(assistant(call(f"r{i}", "read", path=path), stop="toolUse"))
        messages.append(result(f"r{i}", "read", "ok"))
    plain = summarize_offline(messages)
    focused = summarize_offline(messages, custom_focus="special docs")
    assert "- [x] Read docs/special.md" not in section(plain, "### Done")
    assert "- [x] Read docs/special.md" in section(focused, "### Done")


def test_empty_input():
    text = summarize_offline([])
    assert text.startswith(OFFLINE_LABEL)
    assert section(text, "## Goal") == ["- (none)"]
