"""Exports of a session: a branch as HTML or Markdown, the whole session as pi JSONL.

Every view goes through the gate (`responses.session_view`); thin: parse input, call a
service, respond.
"""

from __future__ import annotations

from sessions_app.params import query
from sessions_app.responses import export_response, session_view


@session_view()
def export(request, access, fmt):
    return export_response(request, access, fmt, query(request).optional("leaf"))
