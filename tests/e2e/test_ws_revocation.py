"""Open websockets lose their stream when access goes: a revoked link, a removed team share
or team member closes the socket (4403) while the owner's stays open; a link visitor's
socket never carries streamed text, tool arguments or bash output, and only hears about
entries of the link's branch.

Through daphne (the `asgi_server` fixture) with the `websockets` client; the expiry check
(time based) runs in-process with the interval set to 0.
"""

import asyncio
import json

import pytest
import websockets

from sessions_app.models import ShareLink, Team, TeamMembership
from sessions_app.services import events, sessions, sharing
from tests.support.branchy_session import assistant, build_branchy_session
from tests.support.web import session_cookie_for

pytestmark = [pytest.mark.embedded, pytest.mark.django_db(transaction=True)]

STREAM = [
    ("text_delta", {"run_id": "r", "delta": "SECRET-DELTA", "kind": "text"}),
    ("tool_start", {"run_id": "r", "tool_call_id": "t", "name": "bash", "args": "SECRET-ARGS"}),
    ("bash_snapshot", {"run_id": "r", "tool_call_id": "t", "text": "SECRET-BASH"}),
    ("tool_end", {"run_id": "r", "tool_call_id": "t", "is_error": False}),
    ("run_end", {"run_id": "r", "status": "done"}),
]


@pytest.fixture
def world(make_user):
    owner, member = make_user("owner"), make_user("member")
    team = Team.objects.create(name="readers")
    for user in (owner, member):  # (an owner shares with teams they are in)
        TeamMembership.objects.create(team=team, user=user)
    data = build_branchy_session(owner)
    share = sharing.share_with_team(data.session, team.pk, "viewer", actor=owner)
    link = sharing.create_link(
        data.session, actor=owner, leaf_pi_id=data.ids["a3"], scope=ShareLink.Scope.SUBTREE
    )
    for user in (owner, member):
        user.cookie = session_cookie_for(user)
    return {
        "owner": owner,
        "member": member,
        "team": team,
        "share": share,
        "link": link,
        "data": data,
    }


def _connect(server, session, user=None, token=None):
    url = server.url.replace("http", "ws") + f"/ws/sessions/{session.pi_id}/"
    if token:
        url += f"?share={token}"
    headers = {"Origin": server.url}
    if user is not None:
        cookie = user.cookie  # (made before the event loop runs: it needs the ORM)
        headers["Cookie"] = f"{cookie['name']}={cookie['value']}"
    return websockets.connect(url, additional_headers=headers)


async def _next(ws, timeout=10):
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def _until(ws, event, timeout=10):
    while True:
        message = await _next(ws, timeout)
        if message["event"] == event:
            return message


async def _closed_code(ws, timeout=10) -> int:
    """Read until the server closes the socket; its close code."""
    try:
        while True:
            await asyncio.wait_for(ws.recv(), timeout)
    except websockets.exceptions.ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd else None


async def _still_open(ws):
    await ws.send(json.dumps({"type": "ping"}))
    await _until(ws, "pong")


def test_revoking_the_link_and_unsharing_the_team_close_those_sockets(asgi_server, world):
    session = world["data"].session

    async def scenario():
        async with (
            _connect(asgi_server, session, user=world["owner"]) as owner_ws,
            _connect(asgi_server, session, token=world["link"].token) as link_ws,
            _connect(asgi_server, session, user=world["member"]) as member_ws,
        ):
            for ws in (owner_ws, link_ws, member_ws):
                await _until(ws, "hello")
            await asyncio.to_thread(
                sharing.revoke_link, session, world["link"].pk, actor=world["owner"]
            )
            assert await _closed_code(link_ws) == 4403
            await _until(member_ws, "access_changed")  # re-checked, still a viewer
            await _still_open(member_ws)
            await _still_open(owner_ws)

            await asyncio.to_thread(
                sharing.unshare_team, session, world["share"].pk, actor=world["owner"]
            )
            assert await _closed_code(member_ws) == 4403
            changed = await _until(owner_ws, "access_changed")
            assert changed["data"] == {"role": "owner"}  # the reason is not forwarded
            await _still_open(owner_ws)

    asyncio.run(scenario())


def test_removing_a_team_member_closes_their_socket(asgi_server, world, make_user):
    session = world["data"].session
    other = make_user("other")
    TeamMembership.objects.create(team=world["team"], user=other)
    other.cookie = session_cookie_for(other)

    async def scenario():
        async with (
            _connect(asgi_server, session, user=world["member"]) as member_ws,
            _connect(asgi_server, session, user=other) as other_ws,
        ):
            for ws in (member_ws, other_ws):
                await _until(ws, "hello")
            # as the admin does it: remove the membership row
            await asyncio.to_thread(world["team"].members.remove, world["member"])
            assert await _closed_code(member_ws) == 4403
            await _until(other_ws, "access_changed")
            await _still_open(other_ws)

    asyncio.run(scenario())


def test_downgraded_editor_is_told_the_new_role(asgi_server, world):
    session = world["data"].session
    sharing.share_with_team(session, world["team"].pk, "editor", actor=world["owner"])

    async def scenario():
        async with _connect(asgi_server, session, user=world["member"]) as ws:
            assert (await _until(ws, "hello"))["data"]["role"] == "editor"
            await asyncio.to_thread(
                sharing.share_with_team, session, world["team"].pk, "viewer", actor=world["owner"]
            )
            # a team editor on a viewer share reads and scores (docs/scores.md): a reviewer
            assert (await _until(ws, "access_changed"))["data"] == {"role": "reviewer"}

    asyncio.run(scenario())


def test_link_socket_gets_no_streams_and_only_its_branch(asgi_server, world):
    data = world["data"]
    session, ids = data.session, data.ids

    async def scenario():
        async with (
            _connect(asgi_server, session, user=world["owner"]) as owner_ws,
            _connect(asgi_server, session, token=world["link"].token) as link_ws,
        ):
            await _until(owner_ws, "run_state")
            hello = await _next(link_ws)
            assert hello["event"] == "hello" and hello["data"]["role"] == "viewer"
            for event, payload in STREAM:
                await asyncio.to_thread(events.publish_now, session.pk, event, payload)
            await asyncio.to_thread(events.publish_now, session.pk, "leaf_moved", {"leaf": "x"})
            await asyncio.to_thread(
                sessions.append_entry, session, assistant("On branch B."), parent_pi_id=ids["b3"]
            )
            below = await asyncio.to_thread(
                sessions.append_entry, session, assistant("Below a3."), parent_pi_id=ids["a3"]
            )
            deeper = await asyncio.to_thread(
                sessions.append_entry, session, assistant("Deeper."), parent_pi_id=below.pi_id
            )
            # the owner gets everything, in order
            seen = [(await _next(owner_ws))["event"] for _ in range(len(STREAM) + 4)]
            assert seen[: len(STREAM)] == [e for e, _ in STREAM]
            # the link visitor: nothing but the two entries of its branch, ids only
            first, second = await _next(link_ws), await _next(link_ws)
            assert first == {
                "event": "entry_appended",
                "data": {"id": below.pi_id, "parentId": ids["a3"], "type": "message"},
            }
            assert second["data"]["id"] == deeper.pi_id
            await link_ws.send(json.dumps({"type": "ping"}))
            assert (await _next(link_ws))["event"] == "pong"  # nothing else was queued

    asyncio.run(scenario())


def test_an_expired_link_closes_on_the_next_event(world, monkeypatch, redis_ready):
    """The periodic re-check (no event announces an expiry), in-process with interval 0."""
    from channels.testing import WebsocketCommunicator
    from django.utils import timezone

    from piweb.asgi import application
    from sessions_app import consumers

    monkeypatch.setattr(consumers, "ACCESS_RECHECK_SECONDS", 0)
    session, link = world["data"].session, world["link"]
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]

    async def scenario():
        path = f"/ws/sessions/{session.pi_id}/?share={link.token}"
        communicator = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await communicator.connect(timeout=10)
        assert connected
        assert (await communicator.receive_json_from(timeout=10))["event"] == "hello"
        await asyncio.to_thread(
            ShareLink.objects.filter(pk=link.pk).update, expires_at=timezone.now()
        )
        await asyncio.to_thread(events.publish_now, session.pk, *STREAM[0])
        closed = await communicator.receive_output(timeout=10)
        await communicator.disconnect()
        return closed

    assert asyncio.run(scenario()) == {"type": "websocket.close", "code": 4403}
