"""Exports of a session: a branch as HTML or Markdown, the whole session as pi JSONL.

Every view goes through access.check_access; thin: parse input, call a service, respond.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.views.decorators.http import require_GET

from sessions_app.responses import export_response
from sessions_app.services.access import VIEWER, check_access


@login_required
@require_GET
def export(request, session_id, fmt):
    access = check_access(request.user, session_id, VIEWER)
    return export_response(request, access, fmt, request.GET.get("leaf") or None)
