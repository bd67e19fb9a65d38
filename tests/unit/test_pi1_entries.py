"""The pure views of pi 1.x and unknown entries, and rendering of odd shapes of them."""

import pytest

from sessions_app.core.pi1_entries import (
    UNKNOWN_TEXT_CHARS,
    context_edit_text,
    path_edits,
    system_message_text,
    unknown_entry_text,
    usage_text,
)
from sessions_app.core.preview import entry_row_columns, entry_text
from sessions_app.rendering import render_entry


def test_latest_edit_of_a_target_wins_and_overridden_ones_are_listed():
    edits = [
        {"type": "context_edit", "id": "e1", "targetId": "t", "replacement": None},
        {"type": "message", "id": "m"},
        {"type": "context_edit", "id": "e2", "targetId": "u", "replacement": {"content": "x"}},
        {"type": "context_edit", "id": "e3", "targetId": "t", "replacement": {"content": "y"}},
        {"type": "context_edit", "id": "bad", "targetId": None},
    ]
    winning, overridden = path_edits(edits)
    assert {k: v["id"] for k, v in winning.items()} == {"t": "e3", "u": "e2"}
    assert [e["id"] for e in overridden] == ["e1"]


def test_texts_of_the_new_types():
    usage = {"type": "usage", "kind": "tool_model", "provider": "p", "model": "m", "note": "n",
             "usage": {"totalTokens": 12, "cost": {"total": 0.5}}}  # fmt: skip
    assert usage_text(usage) == "tool_model p/m 12 tokens $0.5000 n"
    assert entry_text(usage) == usage_text(usage)
    drop = {"type": "context_edit", "targetId": "abc", "replacement": None}
    assert context_edit_text(drop) == "drops abc from the context"
    replace = {"type": "context_edit", "targetId": "abc",
               "replacement": {"content": [{"type": "text", "text": "new"}]}}  # fmt: skip
    assert context_edit_text(replace) == "replaces abc: new"
    system = {"role": "system", "content": "prompt", "sections": {"rules": "be kind"},
              "toolsAdded": [{"name": "lint", "description": "Run it"}],
              "toolsRemoved": [{"name": "grep"}]}  # fmt: skip
    assert system_message_text(system) == "prompt\nrules: be kind\n+lint Run it\n-grep"
    assert entry_text({"type": "message", "message": system}) == system_message_text(system)


def test_unknown_entry_text_is_bounded_and_ignores_keys():
    entry = {"type": "future", "id": "x", "parentId": None, "timestamp": "t",
             "deep": [{"k": "a" * 100} for _ in range(10_000)]}  # fmt: skip
    text = unknown_entry_text(entry)
    assert text.startswith("future a") and "k" not in text.replace("a", "")[:10]
    assert len(text) == UNKNOWN_TEXT_CHARS
    assert entry_row_columns(entry)[0] == "future"


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "usage", "usage": "lots", "kind": ["x"]},
        {"type": "usage"},
        {"type": "context_edit", "replacement": "text", "targetId": 5},
        {"type": "context_edit", "replacement": {"content": 7}},
        {"type": "message", "message": {"role": "system", "sections": ["a"], "toolsAdded": 3}},
        {"type": "message", "message": {"role": "system", "content": None}},
        {"type": "message", "message": {"role": "ghost", "content": {"a": 1}}},
        {"type": "message", "message": "not a dict"},
        {"type": "compaction", "systemMessage": {"role": "system"}, "usage": {"cost": "x"}},
        {"type": 12, "payload": float("inf")},
        {"type": "hologram", "x": "\ud800 lone surrogate"},
    ],
)
def test_odd_shapes_render_without_raising(entry):
    parts = render_entry(entry)
    assert parts
    for part in parts:  # what a page sends must encode
        str(part.html).encode("utf-8")
    entry_row_columns(entry)
