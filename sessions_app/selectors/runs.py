"""The agent run of a session as the pages see it: its job, and the state the worker
keeps in Redis while it streams (`services/chat.py` writes it)."""

from __future__ import annotations

import json
import logging
from typing import Any

import redis
from django.conf import settings

from sessions_app.models import Job, Session

log = logging.getLogger(__name__)

_redis_client: redis.Redis | None = None
_redis_url: str | None = None


def redis_client() -> redis.Redis:
    global _redis_client, _redis_url
    if _redis_client is None or _redis_url != settings.REDIS_URL:
        _redis_client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5)
        _redis_url = settings.REDIS_URL
    return _redis_client


def redis_key(kind: str, ident: Any) -> str:
    """The chat's Redis key of one kind (run state, abort flag, …) for one id."""
    prefix = settings.PIWEB_CHAT_REDIS_PREFIX
    return f"{prefix}:{kind}:{ident}"


def run_state(session: Session) -> dict | None:
    """The in-progress run of a session as last saved by the worker, or None."""
    try:
        raw = redis_client().get(redis_key("run", session.pk))
    except redis.RedisError as exc:
        log.warning("could not read run state: %s", exc)
        return None
    return json.loads(raw) if raw else None


def active_run(session: Session) -> Job | None:
    return (
        Job.objects.filter(session=session, kind=Job.Kind.AGENT_RUN, status__in=Job.ACTIVE)
        .order_by("created_at")
        .first()
    )
