"""Steering and follow-up queues (services/chat.py queue_message, cancel_queued, stop_run;
services/jobs/agent_run.py delivery): messages typed while the agent works wait in the
session's queue and reach the model where pi 0.80.2's agent loop takes them, through the
real worker and the scripted model server."""

import threading

import pytest
from django.db import close_old_connections

from sessions_app.models import Job, QueuedMessage
from sessions_app.selectors.runs import run_state
from sessions_app.services import chat, jobs
from sessions_app.services.jobs import agent_run
from tests.support.agent_runs import messages, new_session, send, wait_run
from tests.support.scripted_llm import text, tool_call, user_text
from tests.support.waiting import wait_until
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db(transaction=True)]

# A bash call that waits until the test drops the file `go` into the workspace.
GATED = "while [ ! -f go ]; do sleep 0.05; done; echo released"


def _running_tool(session, call_id):
    """Wait until the worker runs the tool call `call_id`."""
    return wait_until(lambda: call_id in ((run_state(session) or {}).get("tools") or {}), 60)


def _last_user_text(request):
    return user_text([m for m in request["messages"] if m["role"] == "user"][-1])


@pytest.mark.worker
def test_a_steer_comes_after_the_tool_calls_and_a_follow_up_when_the_run_would_end(
    worker, llm, make_user, workspace
):
    owner = make_user()
    session = new_session(owner, workspace)
    llm.push(
        tool_call("bash", {"command": GATED}, call_id="c1"),
        text("Steered answer."),
        text("Follow-up answer."),
    )
    assert send(client_for(owner), session, "start").status_code == 200
    assert _running_tool(session, "c1")
    steer = chat.queue_message(session, owner, "look at the tests instead", "steer")
    dropped = chat.queue_message(session, owner, "never mind", "steer")
    chat.queue_message(session, owner, "then summarize", "follow_up")
    chat.cancel_queued(session, owner, dropped.pk)
    assert [(q.mode, q.text) for q in QueuedMessage.objects.filter(session=session)] == [
        ("steer", "look at the tests instead"),
        ("follow_up", "then summarize"),
    ]
    (workspace / "go").write_text("")
    job = wait_run(session)
    assert job.status == "done"
    assert Job.objects.filter(session=session, kind="agent_run").count() == 1  # one run

    msgs = messages(session)
    assert [(m["role"], user_text(m) if m["role"] == "user" else "") for m in msgs] == [
        ("user", "start"),
        ("assistant", ""),
        ("toolResult", ""),
        ("user", "look at the tests instead"),
        ("assistant", ""),
        ("user", "then summarize"),
        ("assistant", ""),
    ]
    # Delivered as a sent message is stored: a user message with one text part.
    assert msgs[3]["content"] == [{"type": "text", "text": "look at the tests instead"}]
    # The model saw the steer after the tool result, and the follow-up after its answer.
    assert len(llm.requests) == 3
    second, third = llm.requests[1]["messages"], llm.requests[2]["messages"]
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "user"]
    assert "released" in str(second[-2]["content"])
    assert _last_user_text(llm.requests[1]) == "look at the tests instead"
    assert third[-2]["role"] == "assistant" and "Steered answer." in str(third[-2]["content"])
    assert _last_user_text(llm.requests[2]) == "then summarize"
    assert "never mind" not in str(llm.requests)
    assert not QueuedMessage.objects.filter(session=session).exists()
    # A delivered message can no longer be cancelled.
    with pytest.raises(chat.QueueGone):
        chat.cancel_queued(session, owner, steer.pk)


@pytest.mark.worker
def test_stop_hands_the_queued_messages_back_and_delivers_none(worker, llm, make_user, workspace):
    owner = make_user()
    session = new_session(owner, workspace)
    llm.push(tool_call("bash", {"command": GATED}, call_id="c1"), text("never asked"))
    assert send(client_for(owner), session, "start").status_code == 200
    assert _running_tool(session, "c1")
    chat.queue_message(session, owner, "follow this", "follow_up")
    chat.queue_message(session, owner, "steer this", "steer")
    stopped = chat.stop_run(session, owner)
    # Steers first, then follow-ups, as pi puts them back in its editor.
    assert stopped.restored == "steer this\n\nfollow this"
    assert not QueuedMessage.objects.filter(session=session).exists()
    assert wait_run(session).status == "cancelled"
    texts = [user_text(m) for m in messages(session) if m["role"] == "user"]
    assert texts == ["start"]
    assert len(llm.requests) == 1


def test_queueing_needs_a_running_agent_and_a_plain_message(make_user, workspace):
    owner = make_user()
    session = new_session(owner, workspace)
    with pytest.raises(chat.ChatError) as nothing:
        chat.queue_message(session, owner, "hello", "steer")
    assert nothing.value.code == "not_running"
    Job.objects.create(session=session, kind="agent_run", status="running")
    for text_, mode, code in [
        ("!ls", "steer", "bash"),
        ("   ", "follow_up", "empty"),
        ("hello", "sideways", "bad_mode"),
    ]:
        with pytest.raises(chat.ChatError) as refused:
            chat.queue_message(session, owner, text_, mode)
        assert refused.value.code == code
    assert not QueuedMessage.objects.filter(session=session).exists()
    for unknown in (None, 10**9):
        with pytest.raises(chat.QueueGone):
            chat.cancel_queued(session, owner, unknown)


def _race(session, owner, item_pk, parent, run) -> dict:
    """Deliver and cancel the same queued message at once, from two connections."""
    barrier = threading.Barrier(2)
    result = {}

    def deliver():
        barrier.wait()
        try:
            result["entry"] = agent_run.deliver_queued(session, "steer", parent, run)
        finally:
            close_old_connections()

    def cancel():
        barrier.wait()
        try:
            chat.cancel_queued(session, owner, item_pk)
            result["cancelled"] = True
        except chat.QueueGone:
            result["cancelled"] = False
        finally:
            close_old_connections()

    threads = [threading.Thread(target=deliver), threading.Thread(target=cancel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return result


def test_a_queued_message_is_delivered_once_or_cancelled_never_both(make_user, workspace):
    owner = make_user()
    session = new_session(owner, workspace)
    run = Job.objects.create(session=session, kind="agent_run", status="running")
    parent = session.leaf_pi_id
    delivered = 0
    for i in range(8):
        item = chat.queue_message(session, owner, f"race {i}", "steer")
        result = _race(session, owner, item.pk, parent, run)
        assert (result["entry"] is not None) != result["cancelled"], result
        delivered += result["entry"] is not None
    session.refresh_from_db()
    assert session.entries.filter(role="user").count() == delivered
    assert not QueuedMessage.objects.filter(session=session).exists()


@pytest.mark.usefixtures("tasks_stay_in_process")
def test_a_message_queued_as_the_run_ended_starts_the_next_run(llm, make_user, workspace):
    """A `!cmd` run never looks at the queue, like a run past its last look: what waits
    when it ends starts the next run, as sending it then would have."""
    owner = make_user()
    session = new_session(owner, workspace)
    llm.push(text("Answered."))
    job = chat.send_message(session, owner, "!true")
    chat.queue_message(session, owner, "two", "follow_up")
    assert jobs.run_job(str(job.pk)) == "done"
    follow = Job.objects.filter(session=session, kind="agent_run", status="queued").get()
    assert follow.created_by == owner and not QueuedMessage.objects.filter(session=session).exists()
    assert jobs.run_job(str(follow.pk)) == "done"
    roles = [(m["role"], user_text(m) if m["role"] == "user" else "") for m in messages(session)]
    assert roles == [("bashExecution", ""), ("user", "two"), ("assistant", "")]
    assert _last_user_text(llm.requests[0]) == "two"
