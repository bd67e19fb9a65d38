"""Several runs in one session (issue 36): run state, streaming, stop and queue are the
branch's, so two branches of one session run at once through the real worker, each with
its own live output, stop and queue; stopping one leaves the other running."""

import pytest

from sessions_app.models import Job, QueuedMessage
from sessions_app.selectors import paths
from sessions_app.selectors.panels.chat import run_context
from sessions_app.selectors.runs import active_run, run_state
from sessions_app.services import chat, sessions
from tests.support.agent_runs import EventLog, new_session, send
from tests.support.scripted_llm import text, tool_call, user_text
from tests.support.waiting import wait_until
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def _gated(name: str) -> str:
    """A bash call that waits until the test drops the file `name` into the workspace."""
    return f"while [ ! -f {name} ]; do sleep 0.05; done; echo released-{name}"


def _running_tool(session, job, call_id):
    return wait_until(lambda: call_id in ((run_state(session, job) or {}).get("tools") or {}), 60)


def _status(job):
    job.refresh_from_db()
    return job.status


def _texts_on(session, leaf_pi_id):
    return [
        (e["message"]["role"], user_text(e["message"]) if e["message"]["role"] == "user" else "")
        for e in paths.load_path(session, leaf_pi_id)
        if e["type"] == "message"
    ]


def test_two_branches_run_at_once_and_stopping_one_leaves_the_other(
    worker, asgi_server, llm, make_user, workspace
):
    owner = make_user()
    session = new_session(owner, workspace)
    client = client_for(owner)
    node = sessions.append_entry(session, {"type": "session_info", "name": "fork point"})

    with EventLog(asgi_server, session, owner) as log:
        # Branch A starts from the node and waits in its tool.
        llm.push(tool_call("bash", {"command": _gated("go-a")}, call_id="ca"))
        assert send(client, session, "try A").status_code == 200
        run_a = active_run(session)
        assert run_a is not None and _running_tool(session, run_a, "ca")

        # Same branch: a second message is refused as busy (it is queued instead).
        refused = send(client, session, "again on A")
        assert refused.status_code == 409 and b"this branch" in refused.content

        # Back at the node, a second message starts a sibling branch with a run of its own.
        sessions.set_leaf(session, node.pi_id)
        session.refresh_from_db()
        assert active_run(session) is None  # the node's own branch is not A's
        llm.push(tool_call("bash", {"command": _gated("go-b")}, call_id="cb"))
        assert send(client, session, "try B").status_code == 200
        session.refresh_from_db()
        run_b = active_run(session)
        assert run_b is not None and run_b.pk != run_a.pk
        assert _running_tool(session, run_b, "cb")
        assert _status(run_a) == "running" and _status(run_b) == "running"  # at once

        # Each run's live state is its own; a reconnecting page gets both, and which is
        # the run on its leaf.
        assert set(run_state(session, run_a)["tools"]) == {"ca"}
        assert set(run_state(session, run_b)["tools"]) == {"cb"}
        context = run_context(session)
        assert context["active"] == str(run_b.pk)
        assert set(context["runs"]) == {str(run_a.pk), str(run_b.pk)}

        # Queues are the branch's: a follow-up for B waits for B only.
        chat.queue_message(session, owner, "then B again", "follow_up", run_id=str(run_b.pk))
        chat.queue_message(session, owner, "queued for A", "follow_up", run_id=str(run_a.pk))
        assert [q.text for q in QueuedMessage.objects.filter(run=run_b)] == ["then B again"]

        # Stop A: its queued message comes back, B runs on.
        stopped = chat.stop_run(session, owner, run_id=str(run_a.pk))
        assert stopped.job == run_a and stopped.restored == "queued for A"
        assert wait_until(lambda: _status(run_a) == "cancelled", 30)
        assert log.wait_for("run_end", lambda d: d["run_id"] == str(run_a.pk))["status"] in (
            "aborted",
            "cancelled",
        )
        assert _status(run_b) == "running"
        assert "cb" in run_state(session, run_b)["tools"]
        assert not any(d["run_id"] == str(run_b.pk) for d in log.of("run_end"))

        # B finishes, takes its follow-up, and ends.
        llm.push(text("B is done."), text("B again."))
        (workspace / "go-b").write_text("")
        assert wait_until(lambda: _status(run_b) == "done", 60)
        assert log.wait_for("run_end", lambda d: d["run_id"] == str(run_b.pk))["status"] == "done"

    # Both streams went out, each under its own run's id.
    for job, call in ((run_a, "ca"), (run_b, "cb")):
        starts = [d for d in log.of("tool_start") if d["run_id"] == str(job.pk)]
        assert [d["tool_call_id"] for d in starts] == [call]
    assert not QueuedMessage.objects.filter(session=session).exists()
    assert not Job.objects.filter(session=session, status__in=Job.ACTIVE).exists()

    # Each branch holds its own run's entries, below the node.
    session.refresh_from_db()
    run_a.refresh_from_db()
    run_b.refresh_from_db()
    assert _texts_on(session, run_b.result_entry.pi_id) == [
        ("user", "try B"),
        ("assistant", ""),
        ("toolResult", ""),
        ("assistant", ""),
        ("user", "then B again"),
        ("assistant", ""),
    ]
    a_leaf = run_a.result_entry.pi_id if run_a.result_entry else run_a.params["parent"]
    assert [t for t in _texts_on(session, a_leaf) if t[0] == "user"] == [("user", "try A")]
    assert "then B again" not in str(paths.load_path(session, a_leaf))
    assert session.leaf.pi_id == run_b.result_entry.pi_id  # the leaf followed B, shown
