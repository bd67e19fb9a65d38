"""Token and cost counting over session entries, as pi 1.6.0's `getUsageCostBreakdown`.

Which entries count, and under which bucket key:
- an assistant message: `provider/model`, where the model is the message's
  `responseModel` when present (a router's concrete model) and its `model` otherwise;
- a `usage` entry (pi >= 0.86: cache warming, tool models, ...): its own `provider/model`;
- usage on a tool result, and on a compaction or branch-summary entry: `Tools/summaries`.
A bucket's tokens are input + output + cacheRead + cacheWrite (not `totalTokens`) and its
cost is the sum of `usage.cost.total`. Buckets with no cost and no tokens are dropped; the
rest are sorted by cost, highest first, ties keeping the order in which their key first
appeared (JS's sort is stable).

Where pi would read `undefined` and end with NaN (a usage object without numbers, a
missing cost), we count 0: a broken entry must not make a whole total unreadable.

The counting is split so that the database can store the per-entry half (`entry_usage`)
and aggregate it in SQL, and the same ordering rule (`order_buckets`) makes pi's list
from either source.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, NamedTuple

from .jsutil import js_number_to_string
from .text import clean_text

TOOLS_BUCKET = "Tools/summaries"
MAX_KEY_LENGTH = 200


class EntryUsage(NamedTuple):
    """What one entry adds to its bucket."""

    key: str
    input: int
    output: int
    cache_read: int
    cache_write: int
    cost: float

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


@dataclass
class UsageTotals:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0

    def add(self, usage: EntryUsage | UsageTotals) -> None:
        self.input += usage.input
        self.output += usage.output
        self.cache_read += usage.cache_read
        self.cache_write += usage.cache_write
        self.cost += usage.cost

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    @property
    def cache_hit_ratio(self) -> float | None:
        """The share of prompt tokens read from the cache: cacheRead / (input + cacheRead +
        cacheWrite). None when nothing was sent."""
        prompt = self.input + self.cache_read + self.cache_write
        return self.cache_read / prompt if prompt else None

    def as_json(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "tokens": self.tokens,
            "cost": self.cost,
            "cacheHitRatio": self.cache_hit_ratio,
        }


def _js_string(value: Any, present: bool = True) -> str:
    """`${value}` in a JS template literal, for the values JSON can hold."""
    if not present:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return js_number_to_string(value)
    if isinstance(value, list):
        return ",".join("" if v is None else _js_string(v) for v in value)
    return "[object Object]"


# The largest token count one entry may add (in either direction): a trillion tokens is far
# beyond any real call, and the sums of millions of entries still fit the database's
# 64-bit columns. A file that says 1e308 (an import is anyone's writing) counts this.
MAX_ENTRY_TOKENS = 10**12


def _count(value: object) -> int:
    """A token count, within ±MAX_ENTRY_TOKENS; anything that is not a finite number
    counts 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float):
        if not math.isfinite(value):
            return 0
        value = int(max(-MAX_ENTRY_TOKENS, min(MAX_ENTRY_TOKENS, value)))
    return max(-MAX_ENTRY_TOKENS, min(MAX_ENTRY_TOKENS, value))


def _cost(usage: dict[str, Any]) -> float:
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else None
    if isinstance(total, bool) or not isinstance(total, (int, float)):
        return 0.0
    return float(total) if math.isfinite(total) else 0.0


def _model_key(holder: dict[str, Any], model_field: Any, model_present: bool) -> str:
    provider = _js_string(holder.get("provider"), "provider" in holder)
    return f"{provider}/{_js_string(model_field, model_present)}"


def entry_usage(entry: dict[str, Any]) -> EntryUsage | None:
    """The bucket key and usage an entry adds, or None when it counts nothing."""
    etype = entry.get("type")
    message = entry.get("message")
    if not isinstance(message, dict):
        message = {}  # so no role: it counts only as a usage or summary entry can
    role = message.get("role")
    if etype == "message" and role == "assistant":
        if message.get("responseModel") is not None:
            key = _model_key(message, message["responseModel"], True)
        else:
            key = _model_key(message, message.get("model"), "model" in message)
        usage = message.get("usage")
    elif etype == "usage":
        key = _model_key(entry, entry.get("model"), "model" in entry)
        usage = entry.get("usage")
    elif etype == "message" and role == "toolResult" and message.get("usage"):
        key, usage = TOOLS_BUCKET, message.get("usage")
    elif etype in ("branch_summary", "compaction") and entry.get("usage"):
        key, usage = TOOLS_BUCKET, entry.get("usage")
    else:
        return None
    if not isinstance(usage, dict):
        return None
    return EntryUsage(
        clean_text(key[:MAX_KEY_LENGTH]),
        _count(usage.get("input")),
        _count(usage.get("output")),
        _count(usage.get("cacheRead")),
        _count(usage.get("cacheWrite")),
        _cost(usage),
    )


def order_buckets(totals_by_key: dict[str, UsageTotals]) -> list[dict[str, Any]]:
    """pi's breakdown list from totals kept in first-seen key order."""
    rows: list[dict[str, Any]] = [
        {"key": key, "cost": totals.cost, "tokens": totals.tokens}
        for key, totals in totals_by_key.items()
    ]
    rows = [row for row in rows if row["cost"] > 0 or row["tokens"] > 0]
    return sorted(rows, key=lambda row: -row["cost"])


def totals_by_key(entries: Iterable[dict[str, Any]]) -> dict[str, UsageTotals]:
    """Totals per bucket key, keys in the order they first appear."""
    out: dict[str, UsageTotals] = {}
    for entry in entries:
        usage = entry_usage(entry)
        if usage is None:
            continue
        totals = out.get(usage.key)
        if totals is None:
            totals = out[usage.key] = UsageTotals()
        totals.add(usage)
    return out


def usage_breakdown(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Exactly pi's `getUsageCostBreakdown(entries)`: [{key, cost, tokens}, ...]."""
    return order_buckets(totals_by_key(entries))


def breakdown_rows(by_key: dict[str, UsageTotals]) -> list[dict[str, Any]]:
    """pi's buckets and order, each with its full totals: [{"key", "totals"}]."""
    return [{"key": row["key"], "totals": by_key[row["key"]]} for row in order_buckets(by_key)]


_DAY_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_timestamp(value: Any) -> datetime | None:
    """An aware UTC datetime from an ISO timestamp as pi writes it, or None."""
    if not isinstance(value, str) or not _DAY_RE.match(value):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


@functools.lru_cache(maxsize=4096)
def _valid_day(text: str) -> str | None:
    """`text` when it is a real "YYYY-MM-DD" day (few distinct days: cached)."""
    if not _DAY_RE.fullmatch(text):
        return None
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        return None


def entry_day(entry: dict[str, Any]) -> str | None:
    """The UTC day ("YYYY-MM-DD") an entry's usage belongs to, or None."""
    stamp = entry.get("timestamp")
    # pi writes UTC ("...Z"): its day is its first ten characters.
    if isinstance(stamp, str) and stamp[-1:] == "Z":
        return _valid_day(stamp[:10])
    moment = parse_timestamp(stamp)
    return moment.date().isoformat() if moment else None


def usage_with_day(entry: dict[str, Any]) -> tuple[EntryUsage, str | None] | None:
    """(usage, UTC day) of an entry, or None: what the database keeps per entry."""
    usage = entry_usage(entry)
    return None if usage is None else (usage, entry_day(entry))


def usage_summary(entries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """pi's breakdown plus totals, totals by day and by model, and cache-hit ratios."""
    by_key: dict[str, UsageTotals] = {}
    by_day: dict[str, UsageTotals] = {}
    for entry in entries:
        usage = entry_usage(entry)
        if usage is None:
            continue
        by_key.setdefault(usage.key, UsageTotals()).add(usage)
        day = entry_day(entry)
        if day is not None:
            by_day.setdefault(day, UsageTotals()).add(usage)
    return summary_from_totals(by_key, by_day)


def summary_from_totals(
    by_key: dict[str, UsageTotals], by_day: dict[str, UsageTotals]
) -> dict[str, Any]:
    """The `session_usage --json` shape from totals per key (first-seen order) and per day."""
    total = UsageTotals()
    for totals in by_key.values():
        total.add(totals)
    breakdown = order_buckets(by_key)
    return {
        "breakdown": breakdown,
        "totals": {
            **total.as_json(),
            "byModel": [{"key": row["key"], **by_key[row["key"]].as_json()} for row in breakdown],
            "byDay": [{"day": day, **by_day[day].as_json()} for day in sorted(by_day)],
        },
    }
