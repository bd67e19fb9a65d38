"""Unit tests for sessions_app.core.jsutil (JS semantics helpers).

Expected values are what Node.js prints for the same expressions.
"""

import json

import pytest

from sessions_app.core.jsutil import (
    js_json_dumps,
    js_number_to_string,
    js_sort_key,
    js_sorted,
    js_to_fixed,
    utf8_len,
    utf16_len,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("abc", 3),
        ("é", 1),
        ("日本", 2),
        ("😀", 2),  # astral: surrogate pair
        ("a😀b", 4),
        ("\ud800", 1),  # lone high surrogate from JSON
        ("\udc00x", 2),  # lone low surrogate
        ("\ud83d\ude00", 2),  # a pair kept as two code points
    ],
)
def test_utf16_len(text, expected):
    assert utf16_len(text) == expected


def test_js_sorted_uses_utf16_code_units():
    # U+FFFF sorts after an astral char in JS (0xD83D < 0xFFFF), unlike Python.
    items = ["\uffff", "😀", "b", "B", "a", "\ud800", ""]
    assert js_sorted(items) == ["", "B", "a", "b", "\ud800", "😀", "\uffff"]
    assert sorted(items) != js_sorted(items)
    assert js_sort_key("😀") < js_sort_key("\uffff")


def test_js_sorted_is_stable_and_accepts_iterables():
    assert js_sorted(iter(["b", "a", "b"])) == ["a", "b", "b"]


@pytest.mark.parametrize(
    ("value", "digits", "expected"),
    [
        (1.005, 2, "1.00"),  # exact value is 1.00499999...
        (0.125, 2, "0.13"),  # exact tie rounds up
        (1.45, 1, "1.4"),
        (2.5, 0, "3"),
        (0.5, 0, "1"),
        (-1.5, 0, "-2"),
        (-0.001, 2, "-0.00"),
        (-0.0, 2, "0.00"),
        (0, 1, "0.0"),
        (50.0, 1, "50.0"),
        (1023.95, 1, "1024.0"),
        (1.25, 1, "1.3"),
        (1.35, 1, "1.4"),
        (123.456, 0, "123"),
        (1e21, 2, "1e+21"),
        (1.5e300, 1, "1.5e+300"),
        (float("nan"), 2, "NaN"),
        (float("inf"), 1, "Infinity"),
        (12, 3, "12.000"),
        (0.1, 20, "0.10000000000000000555"),
    ],
)
def test_js_to_fixed(value, digits, expected):
    assert js_to_fixed(value, digits) == expected


def test_js_to_fixed_rejects_bad_digits():
    with pytest.raises(ValueError):
        js_to_fixed(1.0, 101)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-2.5, "-2.5"),
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1.2345678901234567e20, "123456789012345670000"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (123e-20, "1.23e-18"),
        (2**60, "1152921504606847000"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_js_number_to_string(value, expected):
    assert js_number_to_string(value) == expected


def test_js_json_dumps_basic():
    assert js_json_dumps({"a": [1, "x", None, True, False]}) == '{"a":[1,"x",null,true,false]}'
    assert js_json_dumps("é😀") == '"é😀"'
    assert js_json_dumps({"s": '\n\t"\\\x01\x7f'}) == '{"s":"\\n\\t\\"\\\\\\u0001\x7f"}'


def test_js_json_dumps_numbers():
    value = [1.0, -0.0, 0.1, 1e-7, 1e16, 1e21, float("nan"), float("inf"), 2**60, 3]
    assert (
        js_json_dumps(value)
        == "[1,0,0.1,1e-7,10000000000000000,1e+21,null,null,1152921504606847000,3]"
    )


def test_js_json_dumps_lone_surrogates_escaped():
    assert js_json_dumps("\ud800") == '"\\ud800"'
    assert js_json_dumps({"k\udfff": "a\udbffb"}) == '{"k\\udfff":"a\\udbffb"}'
    # A high+low pair held as two code points is one character to JS.
    assert js_json_dumps("\ud83d\ude00") == '"😀"'
    # The result is valid JSON that round-trips.
    assert json.loads(js_json_dumps("x\ud800y")) == "x\ud800y"


def test_js_json_dumps_integer_keys_first():
    obj = {"b": 1, "10": 2, "2": 3, "a": 4, "01": 5, "-1": 6, "4294967295": 7}
    assert js_json_dumps(obj) == '{"2":3,"10":2,"b":1,"a":4,"01":5,"-1":6,"4294967295":7}'


def test_js_json_dumps_placeholder_cannot_collide():
    # Strings that look like internal placeholders stay strings.
    tricky = "\x00deadbeef:0\x00"
    assert js_json_dumps([tricky, 1e-9]) == '["\\u0000deadbeef:0\\u0000",1e-9]'


def test_js_json_dumps_rejects_unknown_types():
    with pytest.raises(TypeError):
        js_json_dumps({"x": object()})


def test_js_json_dumps_non_string_keys():
    assert js_json_dumps({None: 1, True: 2, 1.5: 3, 2: 4}) == '{"2":4,"null":1,"true":2,"1.5":3}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("abc", 3),
        ("é", 2),
        ("日本", 6),
        ("😀", 4),
        ("\ud800", 3),  # Node writes a lone surrogate as U+FFFD: 3 bytes
        ("\ud83d\ude00", 4),  # a pair held as two code points is one character
        ("é" * (3 << 20), 6 << 20),  # long enough to be measured in slices
        ("a" * (1 << 20) + "\ud800" + "b", (1 << 20) + 4),
    ],
)
def test_utf8_len(text, expected):
    assert utf8_len(text) == expected
