"""The agent run of a session as the pages see it: its job, and the state the worker
keeps in Redis while it streams (`services/chat.py` writes it)."""

from __future__ import annotations

import json
import logging

import redis

from sessions_app.models import Job, Session
from sessions_app.selectors.shared_state import redis_client, redis_key

log = logging.getLogger(__name__)


def run_state(session: Session) -> dict | None:
    """The in-progress run of a session as last saved by the worker, or None."""
    try:
        raw = redis_client().get(redis_key("run", session.pk))
    except redis.RedisError as exc:
        log.warning("could not read run state: %s", exc)
        return None
    return json.loads(raw) if raw else None


def _active_runs(session_pk: int):
    return Job.objects.filter(session_id=session_pk, kind=Job.Kind.AGENT_RUN, status__in=Job.ACTIVE)


def active_run(session: Session) -> Job | None:
    """The session's queued or working agent run (the oldest, should there be two)."""
    return _active_runs(session.pk).order_by("created_at").first()


def run_active(session_pk: int) -> bool:
    """Whether an agent run of the session is queued or working (no row loaded)."""
    return _active_runs(session_pk).exists()
