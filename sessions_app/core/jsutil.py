"""Small helpers reproducing JavaScript semantics that pi relies on.

pi (the reference implementation) is written in TypeScript, so several of its
observable results depend on JS details that differ from Python:

* ``String.prototype.length`` counts UTF-16 code units, not code points;
* ``JSON.stringify`` has no spaces, prints numbers the JS way, orders
  integer-like object keys first and escapes lone surrogates;
* ``Array.prototype.sort()`` without a comparator orders strings by UTF-16
  code units (so astral characters sort before U+E000..U+FFFF);
* ``Number.prototype.toFixed`` rounds the exact binary value half-up;
* ``new Date(isoString).getTime()`` reads ISO-8601 forms JS's way (``iso_to_ms``).

Python strings decoded from JSON may carry lone surrogates (``"\\ud800"``);
every helper here accepts them.  This module is pure Python: no Django.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Context, Decimal
from functools import lru_cache
from typing import Any

__all__ = [
    "iso_to_ms",
    "js_json_dumps",
    "js_number_to_string",
    "js_sort_key",
    "js_sorted",
    "js_to_fixed",
    "utf16_len",
    "utf8_len",
]

_MAX_SAFE_INT = 2**53
_SURROGATE_RE = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")
# A canonical array index: "0" or no leading zero, value < 2**32 - 1.
_INDEX_KEY_RE = re.compile(r"0|[1-9][0-9]{0,9}")
_MAX_ARRAY_INDEX = 2**32 - 2


def utf16_len(s: str) -> int:
    """Length of ``s`` as JavaScript's ``.length`` reports it.

    Code points >= U+10000 count 2 (a surrogate pair); every other code point,
    including a lone surrogate, counts 1.
    """
    if s.isascii():
        return len(s)
    return len(s.encode("utf-16-le", "surrogatepass")) >> 1


def js_sort_key(s: str) -> bytes:
    """Sort key giving JavaScript's default string order (UTF-16 code units)."""
    # Big-endian UTF-16 bytes compare exactly like the code unit sequence.
    return s.encode("utf-16-be", "surrogatepass")


def js_sorted(strings: Iterable[str]) -> list[str]:
    """``[...strings].sort()`` as JavaScript does it (stable, UTF-16 order)."""
    return sorted(strings, key=js_sort_key)


# --------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------


def _shortest_digits(x: float) -> tuple[str, int]:
    """Shortest round-trip decimal digits of ``abs(x)`` (x finite, non-zero).

    Returns ``(digits, n)`` with value == 0.digits * 10**n, i.e. ECMAScript's
    Number::toString ``s`` (as ``digits``) and ``n``.
    """
    text = repr(abs(x))
    exp = 0
    if "e" in text:
        text, exp_text = text.split("e")
        exp = int(exp_text)
    if "." in text:
        int_part, frac_part = text.split(".")
    else:
        int_part, frac_part = text, ""
    all_digits = int_part + frac_part
    stripped = all_digits.lstrip("0")
    leading_zeros = len(all_digits) - len(stripped)
    n = len(int_part) - leading_zeros + exp
    return stripped.rstrip("0"), n


def _int_to_double(x: int) -> float:
    """The double JSON.parse reads for integer digits: beyond the range, ±Infinity."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def js_number_to_string(x: float | int) -> str:
    """``String(x)`` for a JS number (Number::toString, radix 10).

    Python ints beyond 2**53 are first rounded to a double, as JSON.parse in
    JS would have done.
    """
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        if -_MAX_SAFE_INT <= x <= _MAX_SAFE_INT:
            return str(x)
        x = _int_to_double(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    digits, n = _shortest_digits(x)
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp_text = ("+" if e >= 0 else "-") + str(abs(e))
        if k == 1:
            body = digits + "e" + exp_text
        else:
            body = digits[0] + "." + digits[1:] + "e" + exp_text
    return sign + body


_FIXED_CONTEXT = Context(prec=400)


def js_to_fixed(x: float | int, digits: int = 0) -> str:
    """``Number.prototype.toFixed(digits)``.

    Rounds the exact binary value of ``x`` to ``digits`` decimals, ties away
    from zero (so ``(1.005).toFixed(2) == "1.00"`` because 1.005 is really
    1.00499999..., while ``(0.125).toFixed(2) == "0.13"``).  Values with
    magnitude >= 1e21 print as ``String(x)``; a negative value that rounds to
    zero keeps its sign (``"-0.00"``), negative zero does not.
    """
    if not 0 <= digits <= 100:
        raise ValueError("toFixed() digits argument must be between 0 and 100")
    if isinstance(x, int) and not isinstance(x, bool):
        if not -_MAX_SAFE_INT <= x <= _MAX_SAFE_INT:
            x = float(x)
    x_float = float(x)
    if math.isnan(x_float):
        return "NaN"
    if abs(x_float) >= 1e21:
        return js_number_to_string(x_float)
    sign = "-" if x_float < 0 else ""
    exact = abs(Decimal(x) if isinstance(x, int) else Decimal(x_float))
    quantum = Decimal(1).scaleb(-digits)
    rounded = exact.quantize(quantum, rounding=ROUND_HALF_UP, context=_FIXED_CONTEXT)
    return sign + format(rounded, "f")


# --------------------------------------------------------------------------
# JSON.stringify
# --------------------------------------------------------------------------


def _is_index_key(key: str) -> bool:
    return _INDEX_KEY_RE.fullmatch(key) is not None and int(key) <= _MAX_ARRAY_INDEX


def _simple_float(x: float) -> bool:
    """True when Python's json float text equals the JS one."""
    ax = abs(x)
    return 1e-4 <= ax < 1e16 and not x.is_integer()


class _Prepared:
    """Walks a value, replacing what the C json encoder would print unlike JS."""

    __slots__ = ("nonce", "numbers")

    def __init__(self) -> None:
        self.nonce: str | None = None
        self.numbers: list[str] = []

    def placeholder(self, text: str) -> str:
        if self.nonce is None:
            self.nonce = secrets.token_hex(8)
        self.numbers.append(text)
        return f"\x00{self.nonce}:{len(self.numbers) - 1}\x00"

    def walk(self, value: Any) -> Any:
        if isinstance(value, str) or value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
                return value
            return self.walk(_int_to_double(value))
        if isinstance(value, float):
            if not math.isfinite(value):
                return None  # JSON.stringify(NaN) === "null"
            if value.is_integer() and abs(value) <= _MAX_SAFE_INT:
                return int(value)  # also turns -0.0 into 0, as JS prints it
            if _simple_float(value):
                return value
            return self.placeholder(js_number_to_string(value))
        if isinstance(value, dict):
            return self.walk_dict(value)
        if isinstance(value, (list, tuple)):
            changed = False
            out = []
            for item in value:
                new = self.walk(item)
                changed = changed or new is not item
                out.append(new)
            return out if changed or isinstance(value, tuple) else value
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    def walk_dict(self, value: dict[str, Any]) -> dict[str, Any]:
        changed = False
        items = []
        has_index = False
        for key, item in value.items():
            if not isinstance(key, str):
                if key is None:
                    key = "null"
                elif isinstance(key, (int, float)):
                    key = js_number_to_string(key)
                else:
                    key = str(key)
                changed = True
            if not has_index and key[:1].isdigit() and _is_index_key(key):
                has_index = True
            new = self.walk(item)
            changed = changed or new is not item
            items.append((key, new))
        if has_index:
            # JS objects enumerate integer-like keys first, ascending.
            index_items = sorted(
                ((k, v) for k, v in items if _is_index_key(k)), key=lambda kv: int(kv[0])
            )
            other_items = [(k, v) for k, v in items if not _is_index_key(k)]
            return dict(index_items + other_items)
        if changed:
            return dict(items)
        return value


def _fix_surrogates(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 2:  # a high+low pair kept as two code points: one character
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    return f"\\u{ord(text):04x}"


# ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)``
# without building a new encoder object on every call.
_compact_encode = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False
).encode


def js_json_dumps(obj: Any) -> str:
    """``JSON.stringify(obj)`` for JSON-like Python values.

    No whitespace, non-ASCII kept as is, lone surrogates escaped as
    ``\\udxxx`` (well-formed JSON.stringify), numbers printed as JS prints
    them (``1.0`` -> ``1``, ``1e-7`` -> ``1e-7``, ``1e16`` ->
    ``10000000000000000``), NaN/Infinity -> ``null``, integer-like keys first.
    """
    prepared = _Prepared()
    value = prepared.walk(obj)
    text = _compact_encode(value)
    if prepared.nonce is not None:
        nonce = prepared.nonce
        numbers = prepared.numbers
        pattern = re.compile('"\\\\u0000' + nonce + ':([0-9]+)\\\\u0000"')
        text = pattern.sub(lambda m: numbers[int(m.group(1))], text)
    if not text.isascii() and _SURROGATE_RE.search(text):
        text = _SURROGATE_RE.sub(_fix_surrogates, text)
    return text


def _join_surrogate_pairs(s: str) -> str:
    """Merge high+low surrogate code points into one character, as JS sees them."""
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def utf8_len(s: str) -> int:
    """``Buffer.byteLength(s, "utf-8")``: UTF-8 size, a lone surrogate counting 3.

    (Node encodes a lone surrogate as U+FFFD, three bytes.)  Large strings are
    encoded in slices so no full-size copy is ever allocated.
    """
    if s.isascii():
        return len(s)
    step = 1 << 20
    try:
        if len(s) <= step:
            return len(s.encode("utf-8"))
        return sum(len(s[i : i + step].encode("utf-8")) for i in range(0, len(s), step))
    except UnicodeEncodeError:
        return len(_join_surrogate_pairs(s).encode("utf-8", "surrogatepass"))


# ---------------------------------------------------------------------------
# Timestamps: JS ``new Date(isoString).getTime()``
# ---------------------------------------------------------------------------

_ISO_RE = re.compile(
    r"^(?P<year>[+-]\d{6}|\d{4})"
    r"(?:-(?P<month>\d{2})(?:-(?P<day>\d{2}))?)?"
    r"(?:T(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.(?P<frac>\d+))?)?"
    r"(?P<tz>Z|[+-]\d{2}:\d{2})?)?$"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@lru_cache(maxsize=65536)
def _iso_to_ms_cached(value: str) -> int | None:
    m = _ISO_RE.match(value)
    if not m:
        return None
    year_s = m.group("year")
    if year_s == "-000000":
        return None
    year = int(year_s)
    month = int(m.group("month") or 1)
    day = int(m.group("day") or 1)
    hour = int(m.group("hour") or 0)
    minute = int(m.group("minute") or 0)
    second = int(m.group("second") or 0)
    frac = m.group("frac") or ""
    millis = int((frac + "00")[:3]) if frac else 0
    if not (1 <= month <= 12 and 1 <= day <= 31 and minute <= 59 and second <= 59):
        return None
    extra_day = 0
    if hour == 24:
        if minute or second or millis:
            return None
        hour = 0
        extra_day = 1
    elif hour > 23:
        return None
    # Days-from-civil, valid for any proleptic Gregorian year (datetime only covers 1..9999).
    y = year - (1 if month <= 2 else 0)
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    mp = (month + 9) % 12
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days = era * 146097 + doe - 719468
    # Reject impossible days of month (JS returns NaN for e.g. 2025-02-30).
    if day > _days_in_month(year, month):
        return None
    days += extra_day
    ms = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
    tz = m.group("tz")
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        tzh, tzm = int(tz[1:3]), int(tz[4:6])
        if tzh > 23 or tzm > 59:
            return None
        ms -= sign * (tzh * 60 + tzm) * 60_000
    # Date-time forms without an offset are local time in JS; we run in UTC.
    if abs(ms) > 8.64e15:
        return None
    return ms


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def iso_to_ms(value: Any) -> int | None:
    """JS ``new Date(value).getTime()`` for ISO-8601 strings; ``None`` stands for NaN.

    Date-time strings without an offset are read as UTC (JS would use local time;
    the server runs in UTC).  Non-ISO strings give ``None``.
    """
    if isinstance(value, str):
        return _iso_to_ms_cached(value)
    if isinstance(value, bool) or value is None:
        return None if value is None else int(value)
    if isinstance(value, int):
        return value if abs(value) <= 8.64e15 else None
    if isinstance(value, float):
        if value != value or abs(value) > 8.64e15:
            return None
        return int(value)
    return None
