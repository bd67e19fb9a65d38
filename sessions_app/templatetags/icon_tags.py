"""`{% icon "name" %}`: one icon of the vendored Lucide set (static/vendor/lucide/), inline,
drawn in the text's colour (`stroke="currentColor"`), hidden from screen readers (the
control around it carries the words)."""

from __future__ import annotations

import functools
import re

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from sessions_app.core.shipped import read_shipped

register = template.Library()

ICONS = "static/vendor/lucide"
NAME = re.compile(r"[a-z0-9-]+")


@functools.cache
def _shapes(name: str) -> str:
    """The shapes inside the icon's <svg> element."""
    if not NAME.fullmatch(name):
        raise ValueError(f"not an icon name: {name!r}")
    text = read_shipped(f"{ICONS}/{name}.svg").decode()
    return text[text.index(">", text.index("<svg")) + 1 : text.rindex("</svg>")].strip()


@register.simple_tag
def icon(name: str, label: str = "", size: int = 16) -> str:
    """An inline SVG icon; with `label`, it is announced (role img) instead of hidden."""
    spoken = f' role="img" aria-label="{escape(label)}"' if label else ' aria-hidden="true"'
    return mark_safe(
        f'<svg class="icon icon-{name}" width="{int(size)}" height="{int(size)}" '
        f'viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" '
        f'stroke-linecap="round" stroke-linejoin="round" focusable="false"{spoken}>'
        f"{_shapes(name)}</svg>"
    )
