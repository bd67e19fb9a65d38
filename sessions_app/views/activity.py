"""The activity list of a session (a panel of the session page, and its own page)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from sessions_app.selectors.activity import session_activity
from sessions_app.services.access import VIEWER, check_access


@login_required
@require_GET
def activity(request, session_id):
    access = check_access(request.user, session_id, VIEWER)
    items = session_activity(access.session)
    template = (
        "sessions_app/activity/_activity.html"
        if request.htmx
        else "sessions_app/activity/activity_page.html"
    )
    return render(
        request, template, {"access": access, "session": access.session, "activity": items}
    )
