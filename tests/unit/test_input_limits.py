"""The pure core's limits on imported lines, and text made safe to show."""

import json
import math

import pytest

from sessions_app.core.import_lines import LinePreparer, PreparedEntry, Skip, Warn
from sessions_app.core.input_limits import (
    MAX_JSON_DEPTH,
    bounded,
    display_text,
    display_value,
    js_number,
    line_may_nest_deeper,
    nesting_exceeds,
)
from sessions_app.core.jsutil import js_json_dumps
from sessions_app.core.tree_layout import format_tokens

HEADER = b'{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/w"}\n'


def records(*lines: str) -> list:
    preparer = LinePreparer()
    data = HEADER + "".join(line + "\n" for line in lines).encode("utf-8")
    return preparer.feed(data) + preparer.end()


def nested_line(levels: int) -> str:
    """An entry line with exactly `levels` arrays/objects nested (the entry is one)."""
    inner = "[" * (levels - 1) + "]" * (levels - 1)
    return '{"type":"custom","id":"d1","parentId":null,"data":' + inner + "}"


def test_nesting_is_measured_in_arrays_and_objects():
    assert not nesting_exceeds(json.loads(nested_line(MAX_JSON_DEPTH)))
    assert nesting_exceeds(json.loads(nested_line(MAX_JSON_DEPTH + 1)))
    assert not nesting_exceeds({"a": [1, 2, {"b": "x" * 1000}]}, limit=3)
    assert nesting_exceeds({"a": [1, 2, {"b": []}]}, limit=3)


@pytest.mark.parametrize("limit", [0, 1, 3, MAX_JSON_DEPTH])
@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain",
        '{"a":[1,{"b":[]}]}',
        "[" * 50 + "{" * 50 + "x",
        "[" * 50 + "{" * 51,
        '{"s":"[[[[{{{{"}',
        "{[" * 60,
    ],
)
def test_the_bracket_precheck_counts_every_bracket_up_to_the_limit(text, limit):
    """The cheap check before the walk: true exactly when the line has more than `limit`
    brackets (a line with fewer cannot be nested that deep)."""
    assert line_may_nest_deeper(text, limit) == (text.count("[") + text.count("{") > limit)


def test_a_line_nested_past_the_limit_is_skipped_with_its_reason():
    kept, deep, far = records(
        nested_line(MAX_JSON_DEPTH), nested_line(MAX_JSON_DEPTH + 1), nested_line(50_000)
    )[1:]
    assert isinstance(kept, PreparedEntry)
    assert deep == Skip(3, f"JSON nested deeper than {MAX_JSON_DEPTH} levels (the limit)")
    assert far == Skip(4, "invalid JSON: nested too deeply to read")


def test_long_short_fields_give_a_warning_per_field_and_keep_the_line():
    line = json.dumps(
        {"type": "model_change", "id": "m1", "parentId": None, "provider": "p" * 201}
        | {"modelId": "m" * 5000}
    )
    *warnings, entry = records(line)[1:]
    assert [w.message for w in warnings] == [
        "line 2: provider is 201 characters long; pages show its first 200 (export keeps it whole)",
        "line 2: modelId is 5,000 characters long; pages show its first 200 (export keeps it whole)",
    ]
    assert all(isinstance(w, Warn) for w in warnings)
    assert entry.line == line


def test_a_message_entry_without_a_message_object_is_skipped():
    line = '{"type":"message","id":"a1","parentId":null,"message":null}'
    assert records(line)[1] == Skip(2, "message entry without a message object")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain", "plain"),
        ("a\ud800b", "a\ufffdb"),
        ("\udfff", "\ufffd"),
        ("\ud83d\ude00", "\U0001f600"),  # a pair is one character
        ("\ud83d\ud83d\ude00", "\ufffd\U0001f600"),
        ("é\udc00", "é\ufffd"),
    ],
)
def test_display_text_replaces_lone_surrogates_only(text, shown):
    assert display_text(text) == shown
    assert display_text(text).encode("utf-8")


def test_display_value_cleans_keys_and_values_and_keeps_clean_values_as_they_are():
    clean = {"a": [1, "b", {"c": None}]}
    assert display_value(clean) is clean
    assert display_value({"k\ud800": ["v\udfff", 1e999]}) == {"k\ufffd": ["v\ufffd", math.inf]}


def test_bounded_cuts_and_cleans():
    assert bounded("x" * 300) == "x" * 200 + "…"
    assert bounded(12) == "12"
    assert bounded("a\ud800", 5) == "a\ufffd"


def test_numbers_are_read_as_javascript_reads_them():
    assert js_number(json.loads("1e999")) == math.inf
    assert js_number(json.loads("-1e999")) == -math.inf
    assert js_number(10**400) == math.inf
    assert js_number(2**53 + 1) == float(2**53)
    assert js_number(True) is None and js_number("1") is None
    assert js_json_dumps({"a": 10**400, "b": -(10**400)}) == '{"a":null,"b":null}'


@pytest.mark.parametrize(
    ("value", "shown"),
    [(math.inf, "∞"), (-math.inf, "-∞"), (10**400, "∞"), (1500, "1.5k"), (12.7, "12"), ("x", "")],
)
def test_token_figures_format_any_json_number(value, shown):
    assert format_tokens(value) == shown
