"""Publishing session events to the channel layer group every open page listens on."""

import asyncio
import logging
import os
import threading

from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)

_loop: asyncio.AbstractEventLoop | None = None
_loop_pid: int | None = None
_loop_lock = threading.Lock()


def _publisher_loop() -> asyncio.AbstractEventLoop:
    """One long-lived event loop per process for sending events from sync code.

    async_to_sync made a new loop (and a new Redis connection) for every event, about
    50 ms each; on a kept loop the channel layer reuses its connection (a few ms). It
    also works from a thread that already runs a loop of its own. Re-made after fork.
    """
    global _loop, _loop_pid
    with _loop_lock:
        if _loop is None or _loop_pid != os.getpid() or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="piweb-events", daemon=True).start()
            _loop, _loop_pid = loop, os.getpid()
        return _loop


def session_group(session_pk: int) -> str:
    return f"session.{session_pk}"


def publish_now(session_pk: int, event: str, data: dict) -> None:
    """Send one event to every websocket on the session. Never raises: a page that
    misses an event catches up on its next load, but a write must not fail for it."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        message = {"type": "session.event", "event": event, "data": data}
        future = asyncio.run_coroutine_threadsafe(
            layer.group_send(session_group(session_pk), message), _publisher_loop()
        )
        future.result(timeout=10)
    except Exception as exc:  # the channel layer is best effort by design
        log.warning("could not publish %s for session %s: %s", event, session_pk, exc)


def publish(session_pk: int, event: str, data: dict) -> None:
    """Publish after the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: publish_now(session_pk, event, data))
