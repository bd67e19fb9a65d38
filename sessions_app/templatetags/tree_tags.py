"""Small template helpers for the tree area."""

import re

from django import template
from django.utils.html import escape
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from sessions_app.context.tree_layout import format_tokens

register = template.Library()

KIND_ICONS = {
    "user": ("U", "User message"),
    "assistant": ("A", "Assistant message"),
    "toolResult": ("T", "Tool result"),
    "bash": ("$", "Bash command (!cmd)"),
    "compaction": ("≡", "Compaction summary"),
    "branch_summary": ("↩", "Branch summary"),
    "custom_message": ("✉", "Custom message"),
    "label": ("#", "Label"),
    "session_info": ("i", "Session name"),
    "model_change": ("M", "Model change"),
    "thinking_level_change": ("θ", "Thinking level change"),
    "custom": ("•", "Custom entry"),
}


@register.filter
def tokens(value) -> str:
    try:
        return format_tokens(int(value or 0))
    except (TypeError, ValueError):
        return ""


@register.filter
def kind_icon(kind: str) -> str:
    return KIND_ICONS.get(kind, ("?", kind))[0]


@register.filter
def kind_title(kind: str) -> str:
    return KIND_ICONS.get(kind, ("?", kind))[1]


@register.simple_tag
def state_query(state, **overrides) -> str:
    """The tree view parameters as a query string (leaf, filter, q, open), for hx-get."""
    params = {
        "leaf": state.get("leaf") or "",
        "filter": state.get("filter") or "",
        "q": state.get("q") or "",
    }
    params.update({k: v for k, v in overrides.items() if v is not None})
    return urlencode({k: v for k, v in params.items() if v not in ("", None)})


@register.simple_tag
def highlight_terms(text: str, query: str):
    """Escape `text` and wrap case-insensitive matches of the query's words in <mark>."""
    text = str(text or "")
    words = [w for w in str(query or "").split() if w]
    if not words:
        return escape(text)
    pattern = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.I)
    out, pos = [], 0
    for m in pattern.finditer(text):
        out.append(escape(text[pos : m.start()]))
        out.append(f"<mark>{escape(m.group(0))}</mark>")
        pos = m.end()
    out.append(escape(text[pos:]))
    return mark_safe("".join(out))  # noqa: S308 - every piece escaped above
