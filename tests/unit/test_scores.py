"""core/scores.py: what a score config accepts, and how values read."""

import pytest

from sessions_app.core.scores import (
    ScoreValueError,
    check_config,
    key_choices,
    parse_categories,
    parse_value,
    shown,
)


def test_a_number_needs_a_range():
    check_config("number", 1, 5, [])
    for low, high in ((None, 5), (5, 5), (6, 1)):
        with pytest.raises(ScoreValueError):
            check_config("number", low, high, [])


def test_a_category_needs_two_to_nine_distinct_names():
    check_config("category", None, None, ["good", "bad"])
    for names in (["one"], ["a", "A"], [str(n) for n in range(10)], ["ok", "x" * 61]):
        with pytest.raises(ScoreValueError):
            check_config("category", None, None, names)
    with pytest.raises(ScoreValueError):
        check_config("stars", None, None, [])


def test_values_are_read_by_kind():
    assert parse_value("number", " 4 ", 1, 5, []) == (4.0, "")
    assert parse_value("boolean", "Yes", None, None, []) == (1.0, "yes")
    assert parse_value("boolean", "0", None, None, []) == (0.0, "no")
    assert parse_value("category", "BAD", None, None, ["good", "bad"]) == (1.0, "bad")
    for kind, raw in (("number", "6"), ("number", "nan"), ("number", "x"), ("boolean", "maybe")):
        with pytest.raises(ScoreValueError):
            parse_value(kind, raw, 1, 5, [])
    with pytest.raises(ScoreValueError):
        parse_value("category", "meh", None, None, ["good", "bad"])


def test_categories_are_typed_by_line_or_comma():
    assert parse_categories("good, bad\n ugly ,") == ["good", "bad", "ugly"]


def test_number_keys_cover_small_whole_ranges_only():
    assert key_choices("number", 1, 5, []) == ["1", "2", "3", "4", "5"]
    assert key_choices("number", 0, 10, []) == []
    assert key_choices("number", 0, 1.5, []) == []
    assert key_choices("boolean", None, None, []) == ["yes", "no"]
    assert key_choices("category", None, None, ["a", "b"]) == ["a", "b"]
    assert shown(4.0) == "4" and shown(3.5) == "3.5"


def test_score_filters_read_name_operator_and_number():
    from sessions_app.core.scores import parse_score_filter

    assert parse_score_filter("quality<3") == ("quality", "lt", 3.0)
    assert parse_score_filter(" helpful >= 1 ") == ("helpful", "gte", 1.0)
    assert parse_score_filter("tone=2.5") == ("tone", "exact", 2.5)
    assert parse_score_filter("") is None
    for bad in ("quality", "<3", "quality<x", "a" * 61 + "<1"):
        with pytest.raises(ScoreValueError):
            parse_score_filter(bad)
