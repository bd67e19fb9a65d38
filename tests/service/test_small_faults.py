"""Smaller faults the second attack found, each built the way it was found: a NUL byte in
`!cmd`, an assistant usage of 1e308 tokens, a 10 MB working directory in a session's
header, and the SQLite database file readable by every local user."""

from __future__ import annotations

import io
import json
import os
import stat
import time

import pytest
from django.urls import reverse

from sessions_app.models import Entry, Job, Session
from sessions_app.selectors import paths
from sessions_app.services import chat, jobs, sessions
from sessions_app.services.importer import import_jsonl_stream
from tests.support import page_walk
from tests.support.pi_files import header, message
from tests.support.scripted_llm import text, tool_call
from tests.support.web import client_for

SID = "11111111-2222-3333-4444-555555555555"


@pytest.fixture
def owner(make_user):
    return make_user("faults-owner")


def import_lines(owner, lines: list[dict]):
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return import_jsonl_stream(io.BytesIO(data), owner, filename="f.jsonl", after_commit="inline")


# --- a NUL byte in !cmd -------------------------------------------------------------------


@pytest.fixture
def chat_session(owner, workspace, redis_ready):
    return sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("tasks_stay_in_process")
def test_a_nul_byte_in_a_command_is_refused_with_a_message_when_sent(chat_session, owner):
    url = reverse("sessions_app:chat_send", args=[chat_session.pi_id])
    response = client_for(owner).post(url, {"text": "!echo a\x00b"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert "NUL byte" in response.content.decode()
    assert not Job.objects.filter(session=chat_session).exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("tasks_stay_in_process")
@pytest.mark.embedded
def test_a_queued_command_with_a_nul_byte_ends_with_a_message_not_a_dead_run(chat_session, owner):
    # A run queued before sending checked for it: the worker says why nothing ran. (Only
    # SQLite can hold one in a job's parameters; PostgreSQL's JSON refuses a NUL.)
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL cannot store such a job")
    job = chat.send_message(chat_session, owner, "!echo placeholder")
    Job.objects.filter(pk=job.pk).update(params={**job.params, "command": "echo a\x00b"})
    assert jobs.run_job(str(job.pk)) == "done"
    job.refresh_from_db()
    assert job.status == "done", job.error
    chat_session.refresh_from_db()
    result = paths.load_path(chat_session)[-1]["message"]
    assert result["role"] == "bashExecution" and result["exitCode"] == 126
    assert "NUL byte" in result["output"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("tasks_stay_in_process")
def test_the_agents_bash_tool_with_a_nul_byte_gets_a_tool_error(chat_session, owner, llm):
    llm.push(tool_call("bash", {"command": "echo a\x00b"}, call_id="c1"), text("noted"))
    job = chat.send_message(chat_session, owner, "run it")
    assert jobs.run_job(str(job.pk)) == "done"
    chat_session.refresh_from_db()
    path = paths.load_path(chat_session)
    result = next(e["message"] for e in path if e["message"].get("role") == "toolResult")
    assert result["isError"] and "NUL byte" in result["content"][0]["text"]


# --- 1e308 tokens ---------------------------------------------------------------------------


def usage_line(eid: str, parent: str, **usage) -> dict:
    line = message(eid, parent, role="assistant", text="answer")
    line["message"].update(
        provider="p",
        model="m",
        usage={"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, **usage},
        stopReason="stop",
    )
    return line


@pytest.mark.embedded
@pytest.mark.django_db
def test_absurd_token_counts_import_cleanly_and_pages_render(owner):
    lines = [
        header(SID),
        message("u1", None),
        usage_line("a1", "u1", input=1e308, totalTokens=1e308),
        message("u2", "a1"),
        usage_line("a2", "u2", output=10**30, cacheRead=-(10**30)),
        usage_line("a3", "a2", input=float("1e300"), output=5, cost={"total": 1e308}),
        usage_line("a4", "a3", cost={"total": 1e308}),  # the sum of the costs overflows
    ]
    report = import_lines(owner, lines)
    assert report.status == "created" and report.entries_added == 6
    session = Session.objects.get(pi_id=SID)
    for row in Entry.objects.filter(session=session).values(
        "usage_input", "usage_output", "usage_cache_read", "usage_cache_write"
    ):
        assert all(abs(value) < 2**62 for value in row.values())
    assert 0 < session.usage_tokens < 2**62
    pages = page_walk.walk(session, owner)
    assert page_walk.problems(pages) == []
    assert client_for(owner).get(reverse("sessions_app:usage_dashboard")).status_code == 200


# --- a 10 MB working directory ----------------------------------------------------------------


@pytest.mark.django_db
def test_the_inspector_of_a_session_with_a_10mb_cwd_answers_quickly(owner):
    cwd = "/" + "d" * (10 * 1024 * 1024)
    import_lines(owner, [header(SID, cwd=cwd), message("u1", None), usage_line("a1", "u1")])
    session = Session.objects.get(pi_id=SID)
    url = reverse("sessions_app:inspector", args=[session.pi_id])
    client = client_for(owner)
    started = time.monotonic()
    response = client.get(url)
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    print(f"inspector of a 10 MB cwd: {elapsed:.2f} s")
    assert elapsed < 3, f"the inspector took {elapsed:.1f} s"
    assert len(response.content) < 1024 * 1024
    # the session keeps the first 4,096 characters; the header line keeps them all
    assert len(session.cwd) == 4096 and "d" * 4095 in response.content.decode()


# --- the SQLite database file ----------------------------------------------------------------


def test_a_sqlite_database_piweb_opens_is_the_service_accounts_alone(tmp_path, django_db_blocker):
    """As the embedded default opens var/piweb.sqlite3 (WAL mode), under the usual umask."""
    from django.db.utils import ConnectionHandler

    path = tmp_path / "piweb.sqlite3"
    options = {"init_command": "PRAGMA journal_mode=WAL;"}
    handler = ConnectionHandler(  # (its own handler: "default" here is this file)
        {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path), "OPTIONS": options}}
    )
    handler.settings  # noqa: B018 (fills in the defaults)
    old = os.umask(0o022)
    try:
        conn = handler["default"]
        with django_db_blocker.unblock(), conn.cursor() as cursor:
            cursor.execute("CREATE TABLE t (a)")
            cursor.execute("INSERT INTO t VALUES (1)")
        files = [p for p in (path, tmp_path / "piweb.sqlite3-wal", tmp_path / "piweb.sqlite3-shm")]
        assert path.exists()
        for name in files:
            if name.exists():
                mode = stat.S_IMODE(name.stat().st_mode)
                assert mode & 0o077 == 0, f"{name.name} is {oct(mode)}"
        conn.close()
    finally:
        os.umask(old)
