"""core/tokens.py: pi's token estimates (UTF-16 units / 4, images, tool call arguments as
JSON.stringify writes them), the usage of an answer, the stored per-entry estimate."""

from __future__ import annotations

import random

import pytest

from sessions_app.core.tokens import (
    entry_token_estimate,
    estimate_context_tokens,
    estimate_tokens,
    get_assistant_usage,
)
from tests.support.context_entries import assistant, random_path


def test_token_estimates_utf16_and_usage():
    assert (
        estimate_tokens({"role": "user", "content": "\U0001f600\U0001f600"}) == 1
    )  # 4 UTF-16 units
    # pi 0.80.2 counts an image in a user message as 4800 chars (0.73 ignored it).
    assert (
        estimate_tokens(
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "abcde"}]}
        )
        == 1202
    )
    # pi 0.80.2: usage adding up to zero tokens is no usage.
    zero = assistant("z", None, usage_total=0, text="")["message"]
    assert get_assistant_usage(zero) is None
    aborted = assistant("a", None, stop="aborted", usage_total=999)["message"]
    ok = assistant("b", None, usage_total=50, text="")["message"]
    trailing = {"role": "user", "content": "x" * 8}
    got = estimate_context_tokens([ok, aborted, trailing])
    assert got == {
        "tokens": 50 + estimate_tokens(aborted) + 2,
        "usageTokens": 50,
        "trailingTokens": estimate_tokens(aborted) + 2,
        "lastUsageIndex": 0,
    }


@pytest.mark.parametrize(
    "args",
    [
        {"path": "a.py"},
        {"path": "tab\there", "x": 'quote"back\\slash\u0001'},
        {"path": "\u65e5\u672c.md"},
        {"path": "lone \ud800"},
        {"10": "index key first", "a": "b"},
        {"n": 1.0, "f": 0.1, "big": 10**17, "nested": {"k": [True, None]}},
    ],
)
def test_tool_call_argument_length_matches_json_stringify(args):
    from sessions_app.core.jsutil import js_json_dumps, utf16_len

    msg = {"role": "assistant", "content": [{"type": "toolCall", "name": "x", "arguments": args}]}
    expected_chars = 1 + utf16_len(js_json_dumps(args))
    assert estimate_tokens(msg) == -(-expected_chars // 4)


def test_entry_token_estimate_is_pi_estimate_of_message_entries_only():
    path = random_path(random.Random(7), 300)
    for e in path:
        if e["type"] == "message":
            assert entry_token_estimate(e) == estimate_tokens(e["message"])
        else:
            assert entry_token_estimate(e) == 0
    # A custom_message has content pi could estimate, yet the cut-point walk skips it.
    custom = next(e for e in path if e["type"] == "custom_message" and e["content"])
    assert estimate_tokens({"role": "custom", "content": custom["content"]}) > 0
