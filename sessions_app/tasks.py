"""Celery tasks. They stay thin: load ids, call a service, nothing else."""

from celery import shared_task


@shared_task(name="piweb.ping")
def ping(value: str) -> str:
    """A round-trip probe used by health checks and tests."""
    from sessions_app.services.health import record_ping

    return record_ping(value)
