"""Score values, model-free: what a score config accepts and how a value reads.

A config is a number in a range, a category from a list, or yes/no (docs/scores.md). Every
value is stored as a number so filters compare them ("below 3"): the number itself, 1 or 0
for yes/no, the category's index (its name is kept beside it).
"""

from __future__ import annotations

import math
import re

from sessions_app.core.errors import ServiceError

NUMBER, CATEGORY, BOOLEAN = "number", "category", "boolean"
KINDS = (NUMBER, CATEGORY, BOOLEAN)
YES_WORDS, NO_WORDS = ("yes", "y", "1", "true", "on"), ("no", "n", "0", "false", "off")
MAX_CATEGORIES = 9  # each one a number key in reviewer mode
MAX_CATEGORY_CHARS = 60


class ScoreValueError(ServiceError):
    code = "score"


def check_config(
    kind: str, min_value: float | None, max_value: float | None, categories: list[str]
) -> None:
    """Refuse a config that could not be scored: a number needs min < max, a category
    2 to 9 distinct names."""
    if kind not in KINDS:
        raise ScoreValueError(f"A score is one of {', '.join(KINDS)}.")
    if kind == NUMBER:
        if min_value is None or max_value is None or not min_value < max_value:
            raise ScoreValueError("A number score needs a range: a minimum below the maximum.")
    if kind == CATEGORY:
        if not 2 <= len(categories) <= MAX_CATEGORIES:
            raise ScoreValueError(f"A category score needs 2 to {MAX_CATEGORIES} categories.")
        if len({c.lower() for c in categories}) != len(categories):
            raise ScoreValueError("Each category is named once.")
        if any(not c or len(c) > MAX_CATEGORY_CHARS for c in categories):
            raise ScoreValueError(f"A category name has 1 to {MAX_CATEGORY_CHARS} characters.")


def parse_categories(text: str) -> list[str]:
    """Categories typed one per line or separated by commas."""
    parts = text.replace("\n", ",").split(",")
    return [p.strip() for p in parts if p.strip()]


def parse_value(
    kind: str, raw: str, min_value: float | None, max_value: float | None, categories: list[str]
) -> tuple[float, str]:
    """(number, label) for what a reviewer typed or picked, or a ScoreValueError."""
    raw = (raw or "").strip()
    if kind == BOOLEAN:
        if raw.lower() in YES_WORDS:
            return 1.0, "yes"
        if raw.lower() in NO_WORDS:
            return 0.0, "no"
        raise ScoreValueError("Answer yes or no.")
    if kind == CATEGORY:
        for index, name in enumerate(categories):
            if raw.lower() == name.lower():
                return float(index), name
        raise ScoreValueError(f"Pick one of {', '.join(categories)}.")
    try:
        number = float(raw)
    except ValueError:
        raise ScoreValueError(f"{raw[:20]!r} is not a number.") from None
    low, high = _range(min_value, max_value)
    if not math.isfinite(number) or not low <= number <= high:
        raise ScoreValueError(f"Score from {shown(low)} to {shown(high)}.")
    return number, ""


def _range(min_value: float | None, max_value: float | None) -> tuple[float, float]:
    """A number config's bounds; check_config let none be saved without both."""
    assert min_value is not None and max_value is not None, "a number score has a range"
    return min_value, max_value


def shown(number: float) -> str:
    """A number as a badge shows it: 4, not 4.0; 3.5 stays 3.5."""
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def key_choices(
    kind: str, min_value: float | None, max_value: float | None, categories: list[str]
) -> list[str]:
    """The values reviewer mode's number keys 1-9 give, in order: a whole-number range of
    at most nine values, the categories, or yes / no. Empty when the keys cannot cover it."""
    if kind == BOOLEAN:
        return ["yes", "no"]
    if kind == CATEGORY:
        return list(categories)
    low, high = _range(min_value, max_value)
    if float(low).is_integer() and float(high).is_integer() and high - low < 9:
        return [shown(n) for n in range(int(low), int(high) + 1)]
    return []


SCORE_FILTER = re.compile(
    r"^\s*(?P<name>[^<>=!]{1,60}?)\s*(?P<op><=|>=|<|>|=)\s*(?P<value>-?\d+(?:\.\d+)?)\s*$"
)
OPERATORS = {"<": "lt", "<=": "lte", ">": "gt", ">=": "gte", "=": "exact"}


def parse_score_filter(text: str) -> tuple[str, str, float] | None:
    """`quality<3`, `helpful >= 1`: (config name, Django lookup, number); None if blank.
    A ScoreValueError when it cannot be read."""
    if not (text or "").strip():
        return None
    found = SCORE_FILTER.match(text)
    if found is None:
        raise ScoreValueError(f"A score filter reads like quality<3, not {text[:40]!r}.")
    return found["name"], OPERATORS[found["op"]], float(found["value"])
