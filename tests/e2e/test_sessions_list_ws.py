"""The sessions list's websocket (`/ws/sessions/`, consumers.SessionListConsumer) through
daphne: it says `sessions_changed` to everyone who may see a session that was created,
grew or was shared, and to nobody else; it refuses anonymous sockets and foreign origins.
"""

import asyncio
import json

import pytest
import websockets

from sessions_app.models import Session, Team, TeamMembership
from sessions_app.services import following, sessions, sharing
from tests.support.branchy_session import assistant, build_branchy_session
from tests.support.pi_files import chain_lines, header, line
from tests.support.web import session_cookie_for

pytestmark = [pytest.mark.embedded, pytest.mark.django_db(transaction=True)]

QUIET_SECONDS = 1.5  # how long a socket that must hear nothing is listened to


def _list_socket(server, user=None, origin=None):
    headers = {"Origin": origin or server.url}
    if user is not None:
        cookie = session_cookie_for(user)
        headers["Cookie"] = f"{cookie['name']}={cookie['value']}"
    return websockets.connect(
        server.url.replace("http", "ws") + "/ws/sessions/", additional_headers=headers
    )


async def _event(ws, timeout: float = 10) -> str:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))["event"]


async def _hears_nothing(ws) -> bool:
    try:
        await asyncio.wait_for(ws.recv(), QUIET_SECONDS)
    except TimeoutError:
        return True
    return False


def test_a_change_reaches_the_lists_of_those_who_may_see_the_session(asgi_server, make_user):
    owner, member, stranger = make_user("owner"), make_user("member"), make_user("stranger")
    team = Team.objects.create(name="readers")
    for user in (owner, member):
        TeamMembership.objects.create(team=team, user=user)
    session = build_branchy_session(owner).session
    sharing.share_with_team(session, team.pk, "viewer", actor=owner)
    others = Team.objects.create(name="others")
    TeamMembership.objects.create(team=others, user=owner)
    TeamMembership.objects.create(team=others, user=stranger)
    sockets = {user.username: _list_socket(asgi_server, user) for user in (owner, member, stranger)}

    async def scenario():
        async with (
            sockets["owner"] as owner_ws,
            sockets["member"] as member_ws,
            sockets["stranger"] as stranger_ws,
        ):
            for ws in (owner_ws, member_ws, stranger_ws):
                assert await _event(ws) == "hello"
            await asyncio.to_thread(sessions.append_entry, session, assistant("one more"))
            assert await _event(owner_ws) == "sessions_changed"
            assert await _event(member_ws) == "sessions_changed"
            assert await _hears_nothing(stranger_ws)
            # Shared with the stranger's team: now they see it, so their list changes.
            await asyncio.to_thread(
                sharing.share_with_team, session, others.pk, "viewer", actor=owner
            )
            for ws in (stranger_ws, member_ws):
                assert await _event(ws) == "sessions_changed"
            # The member leaves the team: their list loses the session.
            await asyncio.to_thread(
                lambda: TeamMembership.objects.filter(team=team, user=member).delete()
            )
            assert await _event(member_ws) == "sessions_changed"
            assert await _hears_nothing(member_ws)  # (one event for the whole change)
            await asyncio.to_thread(sessions.append_entry, session, assistant("after leaving"))
            assert await _event(stranger_ws) == "sessions_changed"
            assert await _hears_nothing(member_ws)
            # Unshared from the stranger's team: their list loses it, once.
            share = await asyncio.to_thread(lambda: session.shares.get(team=others))
            await asyncio.to_thread(sharing.unshare_team, session, share.pk, actor=owner)
            assert await _event(stranger_ws) == "sessions_changed"
            assert await _hears_nothing(stranger_ws)
            # The session is deleted: its owner's list drops it.
            while not await _hears_nothing(owner_ws):  # (it heard each change above)
                pass
            await asyncio.to_thread(session.delete)
            assert await _event(owner_ws) == "sessions_changed"

    asyncio.run(scenario())


def test_the_list_socket_needs_a_login_and_our_origin(asgi_server, make_user):
    user = make_user()
    attempts = {
        "anonymous": _list_socket(asgi_server),
        "foreign origin": _list_socket(asgi_server, user, origin="http://evil.example"),
    }

    async def refused(attempt) -> int:
        """The HTTP status of a handshake the server refuses (closed before accept)."""
        with pytest.raises(websockets.exceptions.InvalidStatus) as error:
            async with attempt:
                pass
        return error.value.response.status_code

    async def scenario():
        statuses = {name: await refused(attempt) for name, attempt in attempts.items()}
        assert statuses == {"anonymous": 403, "foreign origin": 403}
        async with _list_socket(asgi_server, user) as ws:  # (the same user, our origin)
            assert await _event(ws) == "hello"

    asyncio.run(scenario())


def test_a_first_scan_tells_the_owners_list_once_per_run(asgi_server, make_user, tmp_path):
    """New files imported together (one transaction) change the list once, after the
    commit; the rows are there when the list asks for them."""
    owner = make_user("pi-user")
    for n in range(3):
        session_id = f"0199f011-0000-7000-8000-{n:012d}"
        path = tmp_path / "--home-me-project--" / f"2026-01-01T00-00-0{n}-000Z_{session_id}.jsonl"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(line(header(session_id)) + b"".join(chain_lines(2)))

    async def scenario():
        async with _list_socket(asgi_server, owner) as ws:
            assert await _event(ws) == "hello"
            totals = await asyncio.to_thread(following.scan, [str(tmp_path)], owner)
            assert totals.changed == 3
            assert await _event(ws) == "sessions_changed"
            assert await asyncio.to_thread(Session.objects.filter(owner=owner).count) == 3
            assert await _hears_nothing(ws)

    asyncio.run(scenario())
