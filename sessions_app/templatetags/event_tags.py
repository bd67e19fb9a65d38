"""The event names of `core/event_names.py`, handed to the page's JS as JSON."""

from django import template
from django.utils.html import json_script

from sessions_app.core.event_names import ALL_EVENTS, SOCKET_EVENTS

register = template.Library()


@register.simple_tag
def event_names():
    """A `<script type="application/json" id="piweb-events">` (data, not code: the CSP
    allows it) with the names piweb.js dispatches."""
    return json_script({"socket": SOCKET_EVENTS, "all": ALL_EVENTS}, "piweb-events")
