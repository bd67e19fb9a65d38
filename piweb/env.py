"""Typed reading of environment values, for piweb/settings.py.

Every value settings.py takes from the environment goes through one of these readers. A
value that is set but does not parse (a boolean that is not one of the words below, a
number that is not a number, a choice outside its list, JSON that is not JSON) stops
startup with ImproperlyConfigured naming the variable, instead of being read as False or
as the default. A variable set to the empty string counts as not set.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


class EnvError(ImproperlyConfigured):
    """An environment value that does not parse; the message names the variable."""


def raw(name: str) -> str | None:
    """The variable's value, or None when it is unset or empty."""
    value = os.environ.get(name)
    return value if value not in (None, "") else None


def set_value(name: str) -> str | None:
    """The value as it is, an empty one included; None only when the variable is unset
    (for the few variables where "set but empty" means something of its own)."""
    return os.environ.get(name)


def text(name: str, default: str = "") -> str:
    value = raw(name)
    return default if value is None else value


def boolean(name: str, default: bool = False) -> bool:
    value = raw(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word in TRUE:
        return True
    if word in FALSE:
        return False
    raise EnvError(f"{name}={value!r} is not a boolean: use one of {', '.join(TRUE + FALSE)}.")


def integer(name: str, default: int, *, minimum: int | None = None) -> int:
    value = raw(name)
    if value is None:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise EnvError(f"{name}={value!r} is not a whole number.") from None
    return _at_least(name, number, minimum)


def decimal(name: str, default: float, *, minimum: float | None = None) -> float:
    value = raw(name)
    if value is None:
        return default
    try:
        number = float(value.strip())
    except ValueError:
        raise EnvError(f"{name}={value!r} is not a number.") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise EnvError(f"{name}={value!r} is not a finite number.")
    return _at_least(name, number, minimum)


def _at_least(name, number, minimum):
    if minimum is not None and number < minimum:
        raise EnvError(f"{name}={number!r} is below its minimum, {minimum}.")
    return number


def choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (compared stripped and lower-cased)."""
    value = raw(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word not in choices:
        raise EnvError(f"{name} must be one of {', '.join(choices)}, not {value!r}.")
    return word


def items(name: str, default: str = "") -> list[str]:
    """A comma-separated list (blank items dropped)."""
    return [item.strip() for item in text(name, default).split(",") if item.strip()]


def path(name: str, default: str | Path) -> Path:
    return Path(text(name, str(default)))


def json_object(name: str) -> dict:
    """A JSON object, {} when unset."""
    value = raw(name)
    if value is None:
        return {}
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise EnvError(f"{name} is not valid JSON: {exc}.") from None
    if not isinstance(parsed, dict):
        raise EnvError(f"{name} must be a JSON object ({{...}}), not {type(parsed).__name__}.")
    return parsed
