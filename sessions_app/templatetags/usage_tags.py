"""Formatting of usage figures (no queries here)."""

from django import template

register = template.Library()


@register.filter
def tokens(value) -> str:
    """12,345,678 -> "12.3M"; below a thousand, the number itself."""
    value = int(value or 0)
    for size, suffix in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}{suffix}"
    return str(value)


@register.filter
def usd(value) -> str:
    """A cost in dollars: cents above a dollar, four decimals below it."""
    value = float(value or 0)
    if value == 0:
        return "$0"
    return f"${value:,.2f}" if abs(value) >= 1 else f"${value:.4f}"


@register.filter
def percent(value) -> str:
    return "–" if value is None else f"{value:.0%}"


@register.filter
def model_list(joined: str) -> list[str]:
    """Session.usage_models (one key a line) as a list."""
    return [key for key in (joined or "").split("\n") if key]


@register.filter
def tag_list(stored: str) -> list[str]:
    """Session.tags (one a line, framed by newlines) as a list."""
    return [tag for tag in (stored or "").split("\n") if tag]
