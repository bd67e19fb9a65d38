"""The Redis client for the small shared state of runs and workers (a run's in-progress
state, its stop signal, rate marks), and the names of its keys."""

from __future__ import annotations

from typing import Any

import redis
from django.conf import settings

_redis_client: redis.Redis | None = None
_redis_url: str | None = None


def redis_client() -> redis.Redis:
    global _redis_client, _redis_url
    if _redis_client is None or _redis_url != settings.REDIS_URL:
        _redis_client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5)
        _redis_url = settings.REDIS_URL
    return _redis_client


def redis_key(kind: str, ident: Any) -> str:
    prefix = settings.PIWEB_CHAT_REDIS_PREFIX
    return f"{prefix}:{kind}:{ident}"
