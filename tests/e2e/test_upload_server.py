"""/import/ through the real server (piweb.server: daphne with bounded, paced bodies) and
the real worker: a body over the limit is refused before it is read; an upload is
imported by the worker while its page polls the job."""

from __future__ import annotations

import re
import socket
import time
import uuid

import httpx
import pytest

from sessions_app.models import Job, Session
from tests.support.pi_files import header, jsonl_text, message
from tests.support.web import SERVER_UPLOAD_LIMIT, session_cookie_for

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_a_body_declared_over_the_limit_is_refused_before_it_is_sent(asgi_server):
    port = int(asgi_server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(
            b"POST /import/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: multipart/form-data; boundary=x\r\n"
            b"Content-Length: %d\r\n\r\n" % (SERVER_UPLOAD_LIMIT + 2 * 1024 * 1024)
        )
        started = time.monotonic()
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"larger than this server accepts" in answer
    assert time.monotonic() - started < 5  # answered at once, the connection closed


def test_a_chunked_body_is_cut_off_once_it_passes_the_limit(asgi_server):
    port = int(asgi_server.url.rsplit(":", 1)[1])
    limit = SERVER_UPLOAD_LIMIT + 1024 * 1024
    piece = b"x" * (1024 * 1024)
    frame = b"%x\r\n" % len(piece) + piece + b"\r\n"
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(
            b"POST /import/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: multipart/form-data; boundary=x\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        try:
            while sent < limit * 2:
                conn.sendall(frame)
                sent += len(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            answer = conn.recv(65536)
        except ConnectionResetError:
            answer = b""
    assert sent < limit * 2  # the server stopped taking the body
    assert sent >= limit - len(piece)
    if answer:
        assert answer.startswith(b"HTTP/1.1 413 ")


def test_an_upload_is_imported_by_the_worker_while_the_page_polls(asgi_server, worker, make_user):
    owner = make_user("server-uploader")
    sid = str(uuid.uuid4())
    items = [message(f"a{i}", f"a{i - 1}" if i else None, text="x" * 200) for i in range(2000)]
    data = jsonl_text(header(sid), items).encode()
    cookie = session_cookie_for(owner)
    with httpx.Client(base_url=asgi_server.url, timeout=60) as client:
        client.cookies.set(cookie["name"], cookie["value"])
        page = client.get("/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        response = client.post(
            "/import/",
            files={"file": ("big.jsonl", data, "application/jsonl")},
            headers={"X-CSRFToken": token, "HX-Request": "true"},
        )
        assert response.status_code == 202, response.text
        assert "<progress" in response.text
        status_url = response.headers["Location"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status = client.get(status_url, headers={"HX-Request": "true"})
            if "every 1s" not in status.text:
                break
            time.sleep(0.2)
    assert status.status_code == 200 and "created" in status.text, status.text
    assert "2000 entries added" in status.text
    session = Session.objects.get(pi_id=sid)
    assert session.owner_id == owner.pk
    assert Job.objects.get(kind="import", session=session).status == "done"
