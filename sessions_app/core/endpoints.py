"""The models box of an endpoint an admin adds on the Models page: one model a line,
``id, context window, max output, input $/M, output $/M`` (all but the id optional;
windows as ``128000`` or ``128k``), read into pi Model specs and written back the same
way; and the APIs such an endpoint may speak.
"""

from __future__ import annotations

import re
from typing import Any

from sessions_app.core.errors import ServiceError
from sessions_app.core.pi_config import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS, ZERO_COST

ENDPOINT_APIS = {
    "openai-completions": "OpenAI-compatible (chat completions)",
    "anthropic-messages": "Anthropic (messages)",
    "google-generative-ai": "Google (Generative AI)",
}
MAX_MODELS = 200
_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([kKmM]?)$")


class EndpointError(ServiceError):
    """An endpoint that cannot be stored (message safe to show)."""

    code = "endpoint"


def _tokens(text: str, what: str, line: int) -> int:
    match = _SIZE.match(text.strip().replace("_", "").replace(",", ""))
    if not match:
        raise EndpointError(
            f"Line {line}: the {what} must be a number of tokens, like 128000 or 128k."
        )
    factor = {"": 1, "k": 1000, "m": 1_000_000}[match.group(2).lower()]
    value = int(float(match.group(1)) * factor)
    if value <= 0:
        raise EndpointError(f"Line {line}: the {what} must be above zero.")
    return value


def _price(text: str, what: str, line: int) -> float:
    try:
        value = float(text.strip().lstrip("$") or "0")
    except ValueError:
        raise EndpointError(f"Line {line}: the {what} price must be a number of dollars.") from None
    if not 0 <= value < 100_000:
        raise EndpointError(f"Line {line}: the {what} price must be 0 or more.")
    return value


def parse_models(text: str) -> list[dict[str, Any]]:
    """The models box: one model a line, ``id, context window, max output, input $/M,
    output $/M`` (all but the id optional), as pi Model specs."""
    models: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, raw in enumerate((text or "").splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in raw.split(",")]
        if len(parts) > 5:
            raise EndpointError(
                f"Line {number}: at most five values (id, window, max output, input and output price)."
            )
        parts += [""] * (5 - len(parts))
        model_id = parts[0]
        if not _MODEL_ID.match(model_id):
            raise EndpointError(f"Line {number}: {model_id[:60]!r} is not a model id.")
        if model_id in seen:
            raise EndpointError(f"Line {number}: {model_id} is listed twice.")
        seen.add(model_id)
        spec: dict[str, Any] = {"id": model_id, "name": model_id}
        if parts[1]:
            spec["contextWindow"] = _tokens(parts[1], "context window", number)
        if parts[2]:
            spec["maxTokens"] = _tokens(parts[2], "max output", number)
        spec["cost"] = {
            **ZERO_COST,
            "input": _price(parts[3], "input", number),
            "output": _price(parts[4], "output", number),
        }
        models.append(spec)
    if not models:
        raise EndpointError("List at least one model, one a line.")
    if len(models) > MAX_MODELS:
        raise EndpointError(f"At most {MAX_MODELS} models per endpoint.")
    return models


def models_text(models: list[dict[str, Any]]) -> str:
    """The models box of a stored endpoint (what `parse_models` reads back)."""
    lines = []
    for m in models:
        cost = m.get("cost") or {}
        lines.append(
            ", ".join(
                [
                    m["id"],
                    str(m.get("contextWindow") or DEFAULT_CONTEXT_WINDOW),
                    str(m.get("maxTokens") or DEFAULT_MAX_TOKENS),
                    f"{cost.get('input', 0):g}",
                    f"{cost.get('output', 0):g}",
                ]
            )
        )
    return "\n".join(lines)
