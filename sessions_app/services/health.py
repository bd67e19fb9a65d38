"""Liveness probes that touch the real broker, worker and database."""

from sessions_app.models import Activity, Session


def record_ping(value: str) -> str:
    """Write a row the caller can see, proving the worker reached the same database."""
    session = Session.objects.filter(pi_id=value).first()
    if session is not None:
        Activity.objects.create(session=session, verb="worker_ping", details={"value": value})
    return value
