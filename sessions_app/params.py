"""Request parameters the views share."""

from __future__ import annotations


def int_or_none(value) -> int | None:
    """A request value as an int, or None when it is missing or not a number."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
