"""Publishing session events to the channel layer group every open page listens on."""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)


def session_group(session_pk: int) -> str:
    return f"session.{session_pk}"


def publish_now(session_pk: int, event: str, data: dict) -> None:
    """Send one event to every websocket on the session. Never raises: a page that
    misses an event catches up on its next load, but a write must not fail for it."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            session_group(session_pk), {"type": "session.event", "event": event, "data": data}
        )
    except Exception as exc:  # the channel layer is best effort by design
        log.warning("could not publish %s for session %s: %s", event, session_pk, exc)


def publish(session_pk: int, event: str, data: dict) -> None:
    """Publish after the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: publish_now(session_pk, event, data))
