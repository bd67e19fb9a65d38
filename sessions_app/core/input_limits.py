"""Limits on what an imported session file may carry, and text made safe to show.

An uploaded file is written by anyone. These limits keep every value that reaches a page
small enough to show, and every parsed line shallow enough to walk:

- a line nested deeper than `MAX_JSON_DEPTH` arrays/objects is skipped (reported);
- a short field (a `cwd`, a session name, a label, a `customType`, a model, provider or
  tool id) longer than its limit in `FIELD_LIMITS` is kept verbatim in the stored line
  (export gives back what was imported) and shown cut to the limit; the import report
  says so;
- lone surrogates (`"\\ud800"` in the JSON) stay in the stored line and become U+FFFD
  wherever text turns into HTML, Markdown or a database column (`display_value`).

Pure: no Django.
"""

from __future__ import annotations

import math
import re
from typing import Any

# Deeper than any real pi line (tool arguments are JSON objects a few levels deep), and
# far below what Python's recursive encoders and the page code can walk.
MAX_JSON_DEPTH = 100

# Characters a short field may hold before pages show it cut (the stored line keeps it).
MAX_CWD_CHARS = 4096  # PATH_MAX on Linux
MAX_ID_CHARS = 200  # model, provider, tool ids; customType; thinking level
MAX_NAME_CHARS = 500  # Session.name
MAX_LABEL_CHARS = 200  # Entry.label

FIELD_LIMITS = {
    "cwd": MAX_CWD_CHARS,
    "parentSession": MAX_CWD_CHARS,
    "name": MAX_NAME_CHARS,
    "label": MAX_LABEL_CHARS,
    "customType": MAX_ID_CHARS,
    "provider": MAX_ID_CHARS,
    "modelId": MAX_ID_CHARS,
    "model": MAX_ID_CHARS,
    "toolName": MAX_ID_CHARS,
    "thinkingLevel": MAX_ID_CHARS,
    "targetId": MAX_ID_CHARS,
    "fromId": MAX_ID_CHARS,
    "firstKeptEntryId": MAX_ID_CHARS,
    "toolCallId": MAX_ID_CHARS,
}
SHORTEST_FIELD_LIMIT = min(FIELD_LIMITS.values())

_LONE_SURROGATE_RE = re.compile(
    "[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]"
)
_ANY_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def nesting_exceeds(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when `value` has more than `limit` arrays/objects nested in each other.

    Iterative (a deep value cannot exhaust the stack) and stops at the first branch
    that is too deep.
    """
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def line_may_nest_deeper(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """False when `text` has too few brackets to be nested deeper than `limit` (cheap: a
    line has a few brackets, and `find` skips to the next one; it stops at limit + 1)."""
    count = 0
    for bracket in "[{":
        at = text.find(bracket)
        while at >= 0:
            count += 1
            if count > limit:
                return True
            at = text.find(bracket, at + 1)
    return False


_FIELD_KEYS = frozenset(FIELD_LIMITS)


def oversized_fields(entry: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(field, length, limit) of each short field of `entry` (and of its `message`)
    longer than its limit. Cheap: runs for every imported line."""
    out = []
    for where, holder in (("", entry), ("message.", entry.get("message"))):
        if not isinstance(holder, dict):
            continue
        for key, value in holder.items():  # (a few keys: cheaper than a set operation)
            if key in _FIELD_KEYS and isinstance(value, str) and len(value) > FIELD_LIMITS[key]:
                out.append((where + key, len(value), FIELD_LIMITS[key]))
    if len(out) > 1:  # in FIELD_LIMITS order, whatever the file's key order
        order = list(FIELD_LIMITS)
        out.sort(key=lambda item: (item[0].count("."), order.index(item[0].rsplit(".", 1)[-1])))
    return out


def display_text(text: str) -> str:
    """`text` with every surrogate code point that is not half of a pair replaced by
    U+FFFD, and pairs joined (what a browser would show for the JSON string)."""
    if text.isascii() or _ANY_SURROGATE_RE.search(text) is None:
        return text
    text = _LONE_SURROGATE_RE.sub("\ufffd", text)
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")


def display_value(value: Any) -> Any:
    """A parsed JSON value with `display_text` applied to every string (keys too).

    Returns `value` itself when nothing needed replacing (the common case costs one
    `isascii` per string).
    """
    if isinstance(value, str):
        return display_text(value)
    if isinstance(value, dict):
        changed = False
        out = {}
        for key, item in value.items():
            new_key = display_text(key) if isinstance(key, str) else key
            new_item = display_value(item)
            changed = changed or new_key is not key or new_item is not item
            out[new_key] = new_item
        return out if changed else value
    if isinstance(value, list):
        items = [display_value(item) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def bounded(value: Any, limit: int = MAX_ID_CHARS) -> str:
    """`str(value)` made safe to show and cut to `limit` characters (with "…")."""
    text = display_text(value if isinstance(value, str) else str(value))
    return text if len(text) <= limit else text[:limit] + "…"


def js_number(value: Any) -> float | int | None:
    """A JSON number as JavaScript holds it (integers beyond 2**53 become doubles, beyond
    the double range ±Infinity), or None for anything that is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and abs(value) > 2**53:
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return value
