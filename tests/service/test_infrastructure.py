"""The real parts answer: a Celery round trip through a worker process and a websocket
round trip through daphne, on whichever backends this pass uses."""

import asyncio
import json

import pytest
import websockets

from sessions_app.models import Activity
from sessions_app.services import sessions
from sessions_app.tasks import ping
from tests.support.waiting import wait_until
from tests.support.web import client_for, session_cookie_for, upload

pytestmark = [pytest.mark.embedded, pytest.mark.django_db(transaction=True)]


def test_celery_round_trip_through_a_real_worker(worker, make_user):
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd="/tmp")
    ping.delay(session.pi_id)
    assert wait_until(lambda: Activity.objects.filter(session=session, verb="worker_ping").exists())


async def _receive_until(ws, event, timeout=10):
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if message["event"] == event:
            return message


def test_websocket_round_trip_through_asgi(asgi_server, make_user):
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd="/tmp")
    cookie = session_cookie_for(owner)
    ws_url = asgi_server.url.replace("http", "ws") + f"/ws/sessions/{session.pi_id}/"

    async def scenario():
        headers = {"Cookie": f"{cookie['name']}={cookie['value']}", "Origin": asgi_server.url}
        async with websockets.connect(ws_url, additional_headers=headers) as ws:
            hello = await _receive_until(ws, "hello")
            assert hello["data"]["role"] == "owner"
            await asyncio.to_thread(
                sessions.append_entry,
                session,
                {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}},
            )
            appended = await _receive_until(ws, "entry_appended")
            return appended["data"]

    data = asyncio.run(scenario())
    session.refresh_from_db()
    assert data["id"] == session.leaf.pi_id


def test_websocket_refuses_foreign_origin_and_strangers(asgi_server, make_user):
    owner, stranger = make_user(), make_user()
    session = sessions.create_session(owner=owner, cwd="/tmp")
    ws_url = asgi_server.url.replace("http", "ws") + f"/ws/sessions/{session.pi_id}/"

    async def attempt(cookie, origin):
        headers = {"Cookie": f"{cookie['name']}={cookie['value']}", "Origin": origin}
        try:
            async with websockets.connect(ws_url, additional_headers=headers) as ws:
                await asyncio.wait_for(ws.recv(), 5)
        except (websockets.exceptions.InvalidStatus, websockets.exceptions.ConnectionClosed) as exc:
            return exc
        return None

    owner_cookie, stranger_cookie = session_cookie_for(owner), session_cookie_for(stranger)
    assert asyncio.run(attempt(owner_cookie, "http://evil.example")) is not None
    assert asyncio.run(attempt(stranger_cookie, asgi_server.url)) is not None
    assert asyncio.run(attempt(owner_cookie, asgi_server.url)) is None


def _searchable_session(word: str) -> tuple[str, bytes]:
    import uuid

    from tests.support.pi_files import header, jsonl_text, message

    head = {**header(), "id": str(uuid.uuid4())}
    entries = [message("a0", None, text="hello"), message("a1", "a0", "assistant", word, 2)]
    return head["id"], jsonl_text(head, entries).encode()


def test_an_uploaded_session_is_indexed_for_search_by_the_worker(worker, make_user):
    from sessions_app.models import SearchDocument
    from sessions_app.selectors.search import search

    owner = make_user()
    session_id, data = _searchable_session("the okapiquux answer")
    response = upload(client_for(owner), data, "s.jsonl", htmx=True)
    assert response.status_code == 200 and "created" in response.content.decode()
    assert wait_until(lambda: SearchDocument.objects.filter(session__pi_id=session_id).exists())
    assert [h.entry_pi_id for h in search(owner, "okapiquux").hits] == ["a1"]


def test_an_upload_is_indexed_at_once_when_no_broker_answers(make_user, monkeypatch):
    from piweb.celery import app
    from sessions_app.selectors.search import search

    # A broker address where nothing listens, and no retries: sending fails fast.
    monkeypatch.setitem(app.conf, "broker_url", "redis://127.0.0.1:9/0")
    monkeypatch.setitem(app.conf, "task_publish_retry", False)
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    owner = make_user()
    _session_id, data = _searchable_session("the narwhalquux answer")
    response = upload(client_for(owner), data, "s.jsonl", htmx=True)
    assert response.status_code == 200 and "created" in response.content.decode()
    assert [h.entry_pi_id for h in search(owner, "narwhalquux").hits] == ["a1"]


def test_the_consumer_ignores_frames_that_are_not_objects():
    from sessions_app.consumers import SessionConsumer

    consumer = SessionConsumer()
    sent = []

    async def send_json(content, close=False):
        sent.append(content)

    consumer.send_json = send_json
    for frame in ([], 1, "ping", None, [{"type": "ping"}]):
        asyncio.run(consumer.receive_json(frame))
    assert sent == []
    asyncio.run(consumer.receive_json({"type": "ping"}))
    assert sent == [{"event": "pong", "data": {}}]
