"""Review markers for other areas' templates: `{% comment_marker session entry_pi_id %}`.

The open-comment counts of a session are computed once per request (one query) and
cached on the request, so a tree of thousands of nodes costs a single query.
"""

from django import template
from django.utils.html import format_html

from sessions_app.context import input_limits
from sessions_app.context.jsutil import js_number_to_string
from sessions_app.services.comments import open_comment_counts_by_pi_id

register = template.Library()


@register.simple_tag(takes_context=True)
def review_panel_ids(context) -> dict[str, str]:
    """{"selected", "leaf"} for the review panel: the query's target/leaf, else the
    session's leaf, else "" (a session with no entries has no leaf)."""
    request = context.get("request")
    session = context.get("session")
    leaf_id = session.leaf.pi_id if session is not None and session.leaf_id else ""
    query = request.GET if request is not None else {}
    return {
        "selected": query.get("target") or leaf_id,
        "leaf": query.get("leaf") or leaf_id,
    }


def _counts(context, session) -> dict[str, int]:
    request = context.get("request")
    cache = getattr(request, "_piweb_comment_counts", None) if request is not None else None
    if cache is None:
        cache = {}
        if request is not None:
            request._piweb_comment_counts = cache
    if session.pk not in cache:
        cache[session.pk] = open_comment_counts_by_pi_id(session)
    return cache[session.pk]


@register.simple_tag(takes_context=True)
def comment_marker(context, session, entry_pi_id) -> str:
    """A small badge with the number of open comment threads on the entry ("" if none)."""
    access = context.get("access")
    if session is None or (access is not None and not access.can_comment):
        return ""  # share-link visitors do not see team comments
    count = _counts(context, session).get(entry_pi_id, 0)
    if not count:
        return ""
    return format_html(
        '<span class="rv-marker" title="{} open comment thread{}" data-open-comments="{}">💬{}</span>',
        count,
        "" if count == 1 else "s",
        count,
        count,
    )


@register.simple_tag(takes_context=True)
def open_comment_count(context, session, entry_pi_id) -> int:
    return _counts(context, session).get(entry_pi_id, 0)


@register.filter
def js_number(value) -> str:
    """A reported figure as JavaScript prints it (a sum that reached 1e999 is
    "Infinity"); anything that is not a number as text."""
    number = input_limits.js_number(value)
    return str(value) if number is None else js_number_to_string(number)
