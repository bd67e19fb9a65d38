"""Reads of the activity list: what happened to a session."""

from __future__ import annotations

from sessions_app.models import Activity, Session

ACTIVITY_LIMIT = 100


def session_activity(session: Session, limit: int = ACTIVITY_LIMIT):
    return Activity.objects.filter(session=session).select_related("actor")[:limit]
