"""The session websocket: one per open session page.

It joins the session's channel-layer group and forwards every event published there
(entries appended, leaf moves, streamed text and bash snapshots, job progress), so
every tab and every viewer sees the same stream, across web processes.
"""

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from sessions_app.services import chat
from sessions_app.services.access import check_access
from sessions_app.services.events import session_group


class SessionConsumer(AsyncJsonWebsocketConsumer):
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
        except (Http404, PermissionDenied):
            await self.close(code=4404)
            return
        self.access = access  # receive handlers: act only when self.access.can_edit
        self.group = session_group(access.session.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json(
            {"event": "hello", "data": {"session": session_id, "role": access.role}}
        )
        state = await database_sync_to_async(_current_run)(access.session)
        await self.send_json({"event": "run_state", "data": state})

    async def disconnect(self, code):
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        if content.get("type") == "ping":
            await self.send_json({"event": "pong", "data": {}})

    async def session_event(self, message):
        await self.send_json({"event": message["event"], "data": message["data"]})


def _current_run(session) -> dict:
    job = chat.active_run(session)
    return {
        "active": str(job.pk) if job else None,
        "run": chat.run_state(session) if job else None,
    }
