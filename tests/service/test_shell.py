"""agent/shell.py's refusal of a command holding a NUL byte, on each way a command comes:
`!cmd` when sent, a run queued before that check, and the agent's bash tool."""

from __future__ import annotations

import pytest
from django.urls import reverse

from sessions_app.models import Job
from sessions_app.selectors import paths
from sessions_app.services import chat, jobs, sessions
from tests.support.scripted_llm import text, tool_call
from tests.support.web import client_for


@pytest.fixture
def owner(make_user):
    return make_user("faults-owner")


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
