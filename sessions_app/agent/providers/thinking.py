"""Thinking levels and token budgets as pi-ai 0.80.2 sets them (``simple-options.js``,
``models.js``): the levels a model supports, the clamped level of a request, the budgets
and the max-token arithmetic.
"""

from __future__ import annotations

from typing import Any

from sessions_app.core.pi_config import THINKING_LEVELS

from .base import ModelRequest, ResolvedModel


def supported_levels(model: dict[str, Any]) -> list[str]:
    """pi's getSupportedThinkingLevels."""
    if not model.get("reasoning"):
        return ["off"]
    level_map = model.get("thinkingLevelMap") or {}
    levels = []
    for level in THINKING_LEVELS:
        if level in level_map and level_map[level] is None:
            continue
        if level in ("xhigh", "max") and level not in level_map:
            continue
        levels.append(level)
    return levels


def clamp_level(model: dict[str, Any], level: str) -> str:
    """pi's clampThinkingLevel: the level itself, else the next one up, else down."""
    available = supported_levels(model)
    if level in available:
        return level
    if level not in THINKING_LEVELS:
        return available[0] if available else "off"
    index = THINKING_LEVELS.index(level)
    for candidate in THINKING_LEVELS[index:]:
        if candidate in available:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:index]):
        if candidate in available:
            return candidate
    return available[0] if available else "off"


def reasoning_level(resolved: ResolvedModel, request: ModelRequest) -> str | None:
    """The level pi passes as ``reasoning`` (None: thinking off). pi's session first
    clamps its level to what the model supports (a non-reasoning model: off; a model
    whose ``thinkingLevelMap`` has ``off: null``: the lowest level it has)."""
    level = clamp_level(resolved.model, request.thinking_level or "off")
    return None if level == "off" else level


def clamp_reasoning(level: str) -> str:
    return "high" if level in ("xhigh", "max") else level


DEFAULT_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}


def thinking_budgets(model: dict[str, Any]) -> dict[str, int]:
    """Budgets per level; ``thinkingBudgets`` (settings.json, carried on the model by
    the service layer) overrides the defaults."""
    return {**DEFAULT_BUDGETS, **(model.get("thinkingBudgets") or {})}


def adjust_for_thinking(
    base_max: int | None, model_max: int, level: str, budgets: dict[str, int]
) -> tuple[int, int]:
    """pi's adjustMaxTokensForThinking: (max_tokens, thinking budget)."""
    budget = budgets[clamp_reasoning(level)]
    max_tokens = model_max if base_max is None else min(base_max + budget, model_max)
    if max_tokens <= budget:
        budget = max(0, max_tokens - 1024)
    return max_tokens, budget


def base_max_tokens(request: ModelRequest) -> int | None:
    """pi 0.80.2's buildBaseOptions: the caller's cap or none (agent turns give none;
    summaries give their budget). There is no fitting to the window in 0.80.2."""
    return int(request.max_tokens) if request.max_tokens else None
