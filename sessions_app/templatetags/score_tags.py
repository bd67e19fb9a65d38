"""Formatting scores for the pages: a score's value, a config's range and choices, and
the badges of the tree and the chat. Tags only format what the context holds."""

from django import template
from django.utils.html import format_html_join

from sessions_app.core import scores as values

register = template.Library()


@register.filter
def score_value(score) -> str:
    """A stored score as a person reads it: the category or yes/no, else the number."""
    return score.label or values.shown(score.value)


@register.filter
def score_number(number) -> str:
    return "" if number is None else values.shown(number)


@register.filter
def score_choices(config) -> list[str]:
    """The values a category or yes/no config offers."""
    return values.key_choices(config.kind, config.min_value, config.max_value, config.categories)


def score_badges_html(badges) -> str:
    """Small badges, one per config (and target) scored on an entry ("" if none)."""
    if not badges:
        return ""
    return format_html_join(
        "",
        '<span class="score-badge" title="{}" data-score-config="{}">{}: {}</span>',
        ((b.title, b.config, b.config, b.text) for b in badges),
    )


@register.simple_tag
def score_badges(badges_by_entry, entry_id):
    """The badges of one entry, from the panel's {entry: [Badge]} map."""
    return score_badges_html((badges_by_entry or {}).get(entry_id))
