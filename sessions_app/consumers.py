"""The websockets: one per open session page (`SessionConsumer`), one per open sessions
list (`SessionListConsumer`).

It joins the session's channel-layer group and forwards every event published there
(entries appended, leaf moves, streamed text and bash snapshots, job progress), so
every tab and every viewer sees the same stream, across web processes.

Access is not only checked at connect: on `access_changed` (published by the sharing
services when a link is revoked, a team share or a member removed…) the socket re-runs
check_access with the same user and share token and closes with 4403 once the access is
gone; a link visitor's socket also re-checks at most every ACCESS_RECHECK_SECONDS as
events arrive (an expired link). A link visitor only gets LINK_EVENTS, and only for
entries of the link's branch: no streamed text, tool arguments or bash output, and for a
"path" link (nothing below its node shows) no event at all.
"""

import time
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth.models import AnonymousUser

from sessions_app.core.errors import ServiceError
from sessions_app.models import ShareLink
from sessions_app.selectors.access import check_access
from sessions_app.selectors.panels.chat import run_context
from sessions_app.selectors.panels.page import page_stamp
from sessions_app.selectors.sharing import link_covers_new_entry
from sessions_app.services.events import session_group, sessions_list_group

ACCESS_RECHECK_SECONDS = 60
# What a share-link visitor's socket forwards: notices that the link's branch grew (the
# share page offers a reload). Streams (text_delta, tool_start, bash_snapshot, tool_end),
# run and job events may concern any branch, so a link visitor never gets them.
LINK_EVENTS = frozenset({"entry_appended"})


class SessionConsumer(AsyncJsonWebsocketConsumer):
    access = None
    closing = False

    async def connect(self):
        session_id = self.scope["url_route"]["kwargs"]["session_id"]
        user = self.scope.get("user")
        # A share-link visitor (review area) connects read-only with ?share=TOKEN.
        share = parse_qs(self.scope.get("query_string", b"").decode("latin-1")).get("share")
        share_token = share[0] if share else None
        if (user is None or not user.is_authenticated) and not share_token:
            await self.close(code=4401)
            return
        try:
            access = await database_sync_to_async(check_access)(
                user or AnonymousUser(), session_id, share_token=share_token
            )
        except ServiceError:  # NotFound or Forbidden
            await self.close(code=4404)
            return
        # Kept for the re-checks: the same user and token as at connect.
        self.session_id, self.share_token = session_id, share_token
        self.user = user or AnonymousUser()
        self._set_access(access)  # receive handlers: act only when self.access.can_edit
        self.group = session_group(access.session.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        hello = {"session": session_id, "role": access.role}
        if not access.via_link:  # after group_add: a change after this stamp is sent to us
            hello["stamp"] = await database_sync_to_async(page_stamp)(access.session.pk)
        await self.send_json({"event": "hello", "data": hello})
        if not access.via_link:  # the live run's text and tools: members only
            state = await database_sync_to_async(run_context)(access.session)
            await self.send_json({"event": "run_state", "data": state})

    def _set_access(self, access) -> None:
        link = access.share_link
        if link is None:
            self.link_branch = set()
        elif self.access is None or getattr(self.access.share_link, "pk", None) != link.pk:
            # Ids known to be the link's leaf or below it: appends there need no query.
            # A "path" link shows nothing below its node: no append ever concerns it.
            self.link_branch = {link.leaf_pi_id} if link.scope == ShareLink.Scope.SUBTREE else set()
        self.access = access
        self.recheck_at = time.monotonic() + ACCESS_RECHECK_SECONDS

    async def _recheck_access(self) -> bool:
        """check_access again as at connect; close with 4403 when the access is gone."""
        try:
            access = await database_sync_to_async(check_access)(
                self.user, self.session_id, share_token=self.share_token
            )
        except ServiceError:  # NotFound or Forbidden
            self.closing = True
            await self.close(code=4403)
            return False
        self._set_access(access)
        return True

    async def _link_notice(self, event: str, data: dict) -> dict | None:
        """The part of an event a link visitor may see, or None."""
        link = self.access.share_link if self.access is not None else None
        if event not in LINK_EVENTS or link is None or link.scope != ShareLink.Scope.SUBTREE:
            return None
        pi_id, parent = data.get("id"), data.get("parentId")
        if parent not in self.link_branch and not await database_sync_to_async(
            link_covers_new_entry
        )(link, pi_id):
            return None  # appended on another branch
        self.link_branch.add(pi_id)
        return {"id": pi_id, "parentId": parent, "type": data.get("type")}

    async def disconnect(self, code):
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        if not isinstance(content, dict):  # e.g. `[]` or `1`: ignore, do not crash
            return
        if content.get("type") == "ping":
            await self.send_json({"event": "pong", "data": {}})

    async def session_event(self, message):
        if self.closing or self.access is None:
            return
        event, data = message["event"], message["data"]
        if event == "access_changed":  # re-check first; the payload is never forwarded
            if await self._recheck_access():
                await self.send_json({"event": event, "data": {"role": self.access.role}})
            return
        if self.access.via_link and time.monotonic() >= self.recheck_at:
            if not await self._recheck_access():  # e.g. the link expired
                return
        if self.access.via_link:  # (a re-check may have found a membership instead)
            notice = await self._link_notice(event, data)
            if notice is not None:
                await self.send_json({"event": event, "data": notice})
            return
        await self.send_json({"event": event, "data": data})


class SessionListConsumer(AsyncJsonWebsocketConsumer):
    """The sessions list's socket: `sessions_changed` when a session the user may see was
    created, grew or was shared (services/events.publish_sessions_changed), so the page
    fetches its rows again, through the user's rights. Logged-in users only; the event
    names no session."""

    group = None

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.group = sessions_list_group(user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json({"event": "hello", "data": {}})

    async def disconnect(self, code):
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"event": "pong", "data": {}})

    async def sessions_changed(self, message):
        await self.send_json({"event": "sessions_changed", "data": {}})
