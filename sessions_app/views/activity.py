"""The activity list of a session (a panel of the session page, and its own page)."""

from __future__ import annotations

from django.shortcuts import render

from sessions_app.responses import session_view
from sessions_app.selectors.activity import session_activity


@session_view()
def activity(request, access):
    items = session_activity(access.session)
    template = (
        "sessions_app/activity/_activity.html"
        if request.htmx
        else "sessions_app/activity/activity_page.html"
    )
    return render(
        request, template, {"access": access, "session": access.session, "activity": items}
    )
