"""Publishing events to the channel layer groups open pages listen on: one group per
session (its page's websocket) and one per user (the sessions list's websocket)."""

import asyncio
import logging
import os
import threading

from channels.layers import get_channel_layer
from django.db import transaction

from sessions_app.selectors.sessions import session_audience
from sessions_app.services import entry_written

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


def sessions_list_group(user_pk: int) -> str:
    return f"sessions-list.{user_pk}"


def _send(groups: list[str], message: dict) -> None:
    """group_send to each group on the publisher loop. Raises what the layer raises."""
    layer = get_channel_layer()
    if layer is None:
        return

    async def send_all():
        await asyncio.gather(*(layer.group_send(group, message) for group in groups))

    asyncio.run_coroutine_threadsafe(send_all(), _publisher_loop()).result(timeout=10)


def publish_now(session_pk: int, event: str, data: dict) -> None:
    """Send one event to every websocket on the session. Never raises: a page that
    misses an event catches up on its next load, but a write must not fail for it."""
    try:
        _send([session_group(session_pk)], {"type": "session.event", "event": event, "data": data})
    except Exception as exc:  # the channel layer is best effort by design
        log.warning("could not publish %s for session %s: %s", event, session_pk, exc)


def publish(session_pk: int, event: str, data: dict) -> None:
    """Publish after the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: publish_now(session_pk, event, data))


def announce_entry(written: entry_written.EntryWritten) -> None:
    """After an appended entry's commit: `entry_appended` to the session's pages and
    `sessions_changed` to the lists of everyone who sees it."""
    entry, session = written.entry, written.session
    data = {
        "id": entry.pi_id,
        "parentId": entry.parent_pi_id,
        "type": entry.type,
        "leaf": session.leaf_pi_id,
    }
    publish_now(session.pk, "entry_appended", data)
    _tell_audience([session.pk])


entry_written.subscribe(entry_written.Subscriber("live_events", after_commit=announce_entry))


def publish_sessions_changed(session_pks) -> None:
    """After the commit, tell the sessions lists of everyone who may then see these
    sessions (their owners, the members of the teams they are shared with) that rows
    changed. The event carries nothing: each open list asks the server for its rows
    again, through the user's own rights. (A change that takes a session away from
    users names them, read before it: `publish_sessions_changed_to`.)"""
    pks = list(session_pks)
    transaction.on_commit(lambda: _tell_audience(pks))


def publish_sessions_changed_to(user_pks) -> None:
    """`sessions_changed` to these users' open sessions lists, after the commit."""
    users = list(user_pks)
    if users:
        transaction.on_commit(lambda: _send_sessions_changed(users))


def _tell_audience(session_pks: list[int]) -> None:
    try:
        users = session_audience(session_pks)
    except Exception as exc:  # (after the commit: best effort, as publish_now)
        log.warning("could not find who sees sessions %s: %s", session_pks[:5], exc)
        return
    _send_sessions_changed(users)


def _send_sessions_changed(user_pks) -> None:
    """`sessions_changed` to these users' open sessions lists, now. Never raises."""
    groups = [sessions_list_group(pk) for pk in sorted(user_pks)]
    if not groups:
        return
    try:
        _send(groups, {"type": "sessions.changed"})
    except Exception as exc:  # best effort, as publish_now
        log.warning("could not tell %d sessions list(s) of a change: %s", len(groups), exc)
