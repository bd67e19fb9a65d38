"""core/preview.py: an entry's role, tool, one-line preview and rough token count for the
tree, its searchable text, and its stored columns (pure, no database)."""

import random

import pytest

from sessions_app.core import preview
from sessions_app.core.preview import (
    PREVIEW_CHARS,
    entry_digest,
    entry_row_columns,
    entry_text,
)
from sessions_app.core.tokens import entry_token_estimate


def message(role, content, **extra):
    return {"type": "message", "id": "e1", "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": role, "content": content, **extra}}  # fmt: skip


def test_an_assistant_turn_previews_without_thinking_and_names_its_first_tool():
    entry = message(
        "assistant",
        [
            {"type": "thinking", "thinking": "let me think"},
            {"type": "text", "text": "Reading   two\nfiles."},
            {"type": "toolCall", "name": "read", "arguments": {"path": "a.py"}},
            {"type": "toolCall", "name": "bash", "arguments": {"command": "ls"}},
        ],
    )
    role, tool, line, tokens = entry_digest(entry)
    assert (role, tool) == ("assistant", "read")
    assert line == 'Reading two files. read({"path": "a.py"}) bash({"command": "ls"})'
    full = 'let me think\nReading   two\nfiles.\nread({"path": "a.py"})\nbash({"command": "ls"})'
    assert tokens == -(-len(full) // 4)  # the thinking counts for tokens, not for the line


def test_tool_results_bash_runs_and_images():
    result = message("toolResult", [{"type": "text", "text": "ok"}], toolName="edit")
    assert entry_digest(result)[:3] == ("toolResult", "edit", "ok")
    bash = {"type": "message", "message": {"role": "bashExecution", "command": "make",
                                           "output": "built\n"}}  # fmt: skip
    assert entry_digest(bash)[:3] == ("bashExecution", "bash", "$ make")
    assert entry_text(bash) == "$ make\nbuilt\n"
    picture = message("user", [{"type": "image", "data": "..."}, {"type": "text", "text": "this"}])
    assert entry_digest(picture)[2] == "[image] this"


@pytest.mark.parametrize(
    ("entry", "text"),
    [
        ({"type": "compaction", "summary": "## Goal"}, "## Goal"),
        ({"type": "branch_summary", "summary": "left"}, "left"),
        ({"type": "label", "label": None}, ""),
        ({"type": "session_info", "name": "Refactor"}, "Refactor"),
        ({"type": "model_change", "provider": "openai", "modelId": "gpt"}, "openai/gpt"),
        ({"type": "thinking_level_change", "thinkingLevel": "high"}, "high"),
        ({"type": "custom", "customType": "ext.state", "data": {}}, "ext.state"),
        (
            {"type": "custom", "customType": "piweb.workspace", "data": {"cwd": "/w/b"}},
            "continue in /w/b",
        ),
        ({"type": "custom_message", "content": [{"type": "text", "text": "note"}]}, "note"),
        ({"type": "message", "message": "not an object"}, ""),
    ],
)
def test_the_text_of_each_entry_type(entry, text):
    assert entry_text(entry) == text
    assert entry_digest(entry)[2] == " ".join(text.split())[:PREVIEW_CHARS]


def test_the_folded_prefix_equals_folding_the_whole_text():
    rng = random.Random(3)
    pieces = ["a", "bb", " ", "  ", "\n", "\t", "é", "\u00a0", "x" * 50]
    for _ in range(500):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 120)))
        limit = rng.randint(1, 40)
        assert preview._folded_prefix(text, limit) == " ".join(text.split())[:limit], text


def test_a_huge_text_is_previewed_from_its_start():
    text = ("word " * 2_000_000) + "end"
    assert entry_digest(message("user", text))[2] == ("word " * 60)[:PREVIEW_CHARS]


def test_row_columns_are_cut_to_their_sizes_and_safe_for_any_database():
    entry = message("user\x00" + "r" * 40, "hi\x00there")
    entry["type"] = "message"
    entry["timestamp"] = "t" * 100
    etype, stamp, role, tool, line, tokens, estimate = entry_row_columns(entry)
    assert etype == "message" and len(stamp) == 40
    assert "\x00" not in role and len(role) <= 32
    assert "\x00" not in line and line.startswith("hi")
    assert estimate == entry_token_estimate(entry)
    odd = entry_row_columns({"type": 12, "timestamp": 5})
    assert odd[:2] == ("12", "5")
