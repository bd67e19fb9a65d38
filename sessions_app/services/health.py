"""Liveness probes that touch the real broker, worker and database."""

from sessions_app.models import Activity
from sessions_app.selectors.sessions import session_by_pi_id


def record_ping(value: str) -> str:
    """Write a row the caller can see, proving the worker reached the same database."""
    session = session_by_pi_id(value)
    if session is not None:
        Activity.objects.create(session=session, verb="worker_ping", details={"value": value})
    return value
