"""Formatting of reported figures for the templates (no queries here)."""

from django import template

from sessions_app.core import input_limits
from sessions_app.core.jsutil import js_number_to_string

register = template.Library()


@register.filter
def js_number(value) -> str:
    """A reported figure as JavaScript prints it (a sum that reached 1e999 is
    "Infinity"); anything that is not a number as text."""
    number = input_limits.js_number(value)
    return str(value) if number is None else js_number_to_string(number)
