"""What a model call cost, as pi's ``calculateCost`` (pi-ai 0.80) computes it (no Django).

Prices are dollars per million tokens (``model["cost"]``: input, output, cacheRead,
cacheWrite, optional ``tiers``). A tier applies when the prompt (input + cacheRead +
cacheWrite) is above its ``inputTokensAbove``; of several, the highest threshold that is
exceeded wins. Cache writes that Anthropic keeps for an hour (``usage.cacheWrite1h``, a
part of ``cacheWrite``) cost twice the input price instead of the cache-write price.
"""

from __future__ import annotations

from typing import Any

M = 1_000_000


def _num(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def calculate_cost(model: dict[str, Any], usage: dict[str, Any]) -> dict[str, float]:
    """Fill ``usage["cost"]`` from the model's prices and return it."""
    prices = model.get("cost") or {}
    inp, out = _num(usage.get("input")), _num(usage.get("output"))
    cache_read, cache_write = _num(usage.get("cacheRead")), _num(usage.get("cacheWrite"))
    prompt = inp + cache_read + cache_write
    rates = prices
    matched = -1.0
    for tier in prices.get("tiers") or []:
        above = _num(tier.get("inputTokensAbove"))
        if prompt > above and above > matched:
            rates, matched = tier, above
    long_write = _num(usage.get("cacheWrite1h"))
    short_write = cache_write - long_write
    cost = {
        "input": _num(rates.get("input")) / M * inp,
        "output": _num(rates.get("output")) / M * out,
        "cacheRead": _num(rates.get("cacheRead")) / M * cache_read,
        "cacheWrite": (
            _num(rates.get("cacheWrite")) * short_write + _num(rates.get("input")) * 2 * long_write
        )
        / M,
    }
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    usage["cost"] = cost
    return cost


def price_per_million(model: dict[str, Any]) -> tuple[float, float]:
    """The base (untiered) input and output prices of a model, per million tokens."""
    prices = model.get("cost") or {}
    return _num(prices.get("input")), _num(prices.get("output"))


def _plus(first: dict[str, Any], second: dict[str, Any], key: str) -> int | float:
    """A sum that stays whole when both parts are (token counts are)."""
    parts = [side.get(key) for side in (first, second)]
    values = [v if isinstance(v, int | float) and not isinstance(v, bool) else 0 for v in parts]
    return values[0] + values[1]


def combine_usage(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two priced usages as one, as pi's ``combineUsage`` adds them (a compaction's history
    and turn-prefix calls): the optional 1h cache-write and reasoning counts are kept when
    either side has them; a total is the provider's only when both parts were."""
    combined: dict[str, Any] = {
        key: _plus(first, second, key) for key in ("input", "output", "cacheRead", "cacheWrite")
    }
    for optional in ("cacheWrite1h", "reasoning"):
        if optional in first or optional in second:
            combined[optional] = _plus(first, second, optional)
    combined["totalTokens"] = _plus(first, second, "totalTokens")
    one, two = first.get("cost") or {}, second.get("cost") or {}
    cost: dict[str, Any] = {
        key: _plus(one, two, key) for key in ("input", "output", "cacheRead", "cacheWrite", "total")
    }
    cost["totalFromProvider"] = (
        one.get("totalFromProvider") is True and two.get("totalFromProvider") is True
    )
    combined["cost"] = cost
    return combined
