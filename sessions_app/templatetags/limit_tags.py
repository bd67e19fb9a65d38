"""`{{ value|clip }}`: any text a page shows, cut to a bounded length.

Session fields (cwd, name…) and entry values come from imported files: a page never
shows more than `limit` characters of one (default settings.PIWEB_PREVIEW_CHARS), nor a
lone surrogate, which no response can encode.
"""

from django import template
from django.conf import settings

from sessions_app.core.text import clean_text

register = template.Library()


@register.filter
def clip(value, limit=None) -> str:
    text = "" if value is None else clean_text(str(value))
    try:
        limit = int(limit) if limit is not None else settings.PIWEB_PREVIEW_CHARS
    except (TypeError, ValueError):
        limit = settings.PIWEB_PREVIEW_CHARS
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"
