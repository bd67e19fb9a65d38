"""The names of the events the server and the page share, defined once.

The page's websocket client (`static/piweb/piweb.js`) re-dispatches every event the server
sends as the DOM event `piweb:<name>` on `<body>`; panels refresh themselves with a
declarative `hx-trigger="piweb:<name> from:body"`. `base.html` hands these lists to the
JS (`json_script`, through `templatetags/event_tags.py`), and piweb.js dispatches only
the names it finds there. `tests/unit/test_event_names.py` holds the lists equal to the
names the Python, the templates and the JS use.
"""

# Sent on a session page's websocket: by the consumer itself, by `services/events.py`
# for a state change, and by the agent run while it streams.
SESSION_EVENTS = (
    "hello",  # the socket is joined (with the caller's role)
    "pong",
    "run_state",  # the run in progress, on connect
    "text_delta",
    "tool_start",
    "bash_snapshot",
    "tool_end",
    "message_end",
    "run_status",  # retrying, compacting, running again
    "run_end",
    "queue_changed",  # a message typed during the run was queued, delivered or cancelled
    "entry_appended",
    "files_changed",
    "leaf_moved",
    "job_progress",
    "provenance_changed",
    "session_changed",
    "access_changed",
)

# Sent on the sessions list's websocket.
LIST_EVENTS = ("hello", "pong", "sessions_changed")

# Sent with an htmx response (`HX-Trigger`, through `responses.notice` or django-htmx).
RESPONSE_EVENTS = (
    "tree-refresh",
    "job-queued",
    "prefill-input",
    "comments-changed",
    "model-switched",  # the chat's model changed (the picker, its notice's fix, /model)
    "thinking-set",
    "session-renamed",  # /name
)

# Raised by the page itself: the socket's state, and one panel asking another.
PAGE_EVENTS = (
    "ws-open",
    "ws-closed",
    "sessions-refresh",
    "open-chart",
    "select-entry",
)

SOCKET_EVENTS = tuple(dict.fromkeys(SESSION_EVENTS + LIST_EVENTS))
ALL_EVENTS = SOCKET_EVENTS + RESPONSE_EVENTS + PAGE_EVENTS
