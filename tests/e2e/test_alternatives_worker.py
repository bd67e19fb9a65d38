"""Alternatives (issue 36) through real workers, with scripted models: variants of one
step run as sibling branches, each in its own copy of the node's files, at once when the
limit allows, else within each user's own run limit; the check runs in each (a failed
one too) and is recorded; "Stop all" (no check after a stop). The command line:
tests/service/test_alternatives_command.py."""

import json
import shutil
import sys
import uuid
from pathlib import Path

import pytest
from django.urls import reverse

from sessions_app.models import Entry, Job
from sessions_app.selectors.alternatives import comparison
from sessions_app.selectors.runs import run_state
from sessions_app.services import alternatives, chat
from tests.support.agent_runs import new_session, wait_run
from tests.support.processes import ManagedProcess
from tests.support.scripted_llm import error, text, tool_call
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def _gated_write(content: str) -> str:
    return f"while [ ! -f go ]; do sleep 0.05; done; printf '{content}\\n' > f.txt"


def _status(job):
    job.refresh_from_db()
    return job.status


def _node(owner, workspace):
    """A session whose last node is a `!cmd` that left f.txt = "node" (its snapshot);
    the folder changes after it."""
    session = new_session(owner, workspace)
    (workspace / "f.txt").write_text("base\n")
    chat.send_message(session, owner, "!printf 'node\\n' > f.txt")
    assert wait_run(session).status == "done"
    session.refresh_from_db()
    (workspace / "f.txt").write_text("later\n")
    return session, session.leaf_pi_id


@pytest.fixture
def wide_worker(child_env, tmp_path_factory):
    """A worker with four processes and a limit of four runs per user, so that four
    variants run at once (the shared `worker` has two processes and the default limit)."""
    from piweb import queues

    env = {**child_env, "PIWEB_USER_MAX_RUNS": "4"}
    queue = ",".join(queues.all_queues(child_env.get("PIWEB_CELERY_QUEUE", "piweb")))
    argv = [sys.executable, "-m", "celery", "-A", "piweb", "worker", "-l", "info", "-c", "4",
            "-Q", queue, "--without-gossip", "--without-mingle",
            "-n", f"test-wide-{uuid.uuid4().hex[:6]}@%h"]  # fmt: skip
    proc = ManagedProcess(
        "celery-wide-worker",
        argv,
        env,
        lambda p: "ready." in p.log.read_text(errors="replace"),
        tmp_path_factory.mktemp("wide-worker"),
    )
    proc.start()
    yield proc
    proc.stop()


def _running_tool(session, job, call_id) -> bool:
    return call_id in ((run_state(session, job) or {}).get("tools") or {})


def test_variants_run_at_once_in_their_own_copies_and_are_checked(
    wide_worker, llm, make_user, workspace, settings
):
    """Issue 36's end-to-end test, with the limit raised to 4: three variants run at once
    from one node, each edits f.txt its own way in its own copy of the node's files, the
    check passes in one and fails in the others; a fourth's provider error leaves the
    three running, and its column shows the error and its check (run in its copy)."""
    settings.PIWEB_USER_MAX_RUNS = 4
    owner = make_user()
    session, node = _node(owner, workspace)
    names = ("one", "two", "three")
    for n, word in zip(names, ("good", "bad", "meh"), strict=True):
        llm.push_for(
            f"variant {n}",
            tool_call("bash", {"command": _gated_write(word)}, call_id=f"v-{n}"),
            text(f"{n.title()}: wrote {word}."),
        )
    llm.push_for("variant four", error(400, "variant four is refused"))
    variants = [alternatives.Variant(f"variant {n}") for n in (*names, "four")]
    started = alternatives.start(session, owner, node, variants, check="grep -q good f.txt")
    jobs = [s.job for s in started]
    assert [s.workspace.source for s in started] == ["snapshot"] * 4
    assert not any(chat.is_held(Job.objects.get(pk=j.pk)) for j in jobs)

    # The three run at once (each is in its gated command); the fourth fails meanwhile.
    assert wait_until(
        lambda: all(
            _running_tool(session, j, f"v-{n}") for j, n in zip(jobs[:3], names, strict=True)
        ),
        90,
    )
    assert wait_until(lambda: _status(jobs[3]) == "failed", 60)
    assert [_status(j) for j in jobs[:3]] == ["running"] * 3
    four = comparison(session, jobs)[3]
    assert "variant four is refused" in four["answer"] and four["error"]
    assert four["check_exit"] == 1 and four["check"]["command"] == "grep -q good f.txt"

    for s in started[:3]:
        (Path(s.workspace.path) / "go").write_text("")
    assert wait_until(lambda: all(_status(j) == "done" for j in jobs[:3]), 60)

    # Each edited its own copy of the node's files; the session's folder is untouched.
    contents = [(Path(s.workspace.path) / "f.txt").read_text() for s in started]
    assert contents == ["good\n", "bad\n", "meh\n", "node\n"]
    assert (workspace / "f.txt").read_text() == "later\n"
    # No variant saw another's messages.
    for request in llm.requests:
        seen = json.dumps(request["messages"])
        assert sum(f"variant {n}" in seen for n in (*names, "four")) == 1

    # The comparison: answers, check results (a piweb.check entry each), files, the error.
    one, two, three, four = comparison(session, jobs)
    assert one["answer"] == "One: wrote good." and two["answer"] == "Two: wrote bad."
    assert three["answer"] == "Three: wrote meh."
    assert [c["check_exit"] for c in (one, two, three, four)] == [0, 1, 1, 1]
    for c in (one, two, three):
        assert c["files_changed"] == ["f.txt", "go"]  # (the gate too)
        assert c["turns"] == 2 and c["seconds"] > 0 and c["tokens"] > 0
    assert four["status"] == "failed" and four["files_changed"] == []
    checks = Entry.objects.filter(session=session, type="custom")
    checks = [e.payload["data"] for e in checks if e.payload.get("customType") == "piweb.check"]
    assert sorted(c["exitCode"] for c in checks) == [0, 1, 1, 1]
    assert all(c["command"] == "grep -q good f.txt" and c["seconds"] >= 0 for c in checks)
    # Sibling branches of the node.
    heads = Entry.objects.filter(session=session, parent__pi_id=node)
    assert {e.pi_id for e in heads} == {s.head_pi_id for s in started}


@pytest.fixture
def other_workspace(settings):
    """A second fresh workspace (for a second user), removed afterwards."""
    path = Path(settings.PIWEB_WORKSPACE_ROOTS[0]) / f"ws-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    yield path
    real = path.resolve()
    if path.is_symlink():  # moved by place_workspace
        path.unlink()
    shutil.rmtree(real, ignore_errors=True)


def test_two_users_variants_keep_each_users_run_limit(
    worker, llm, make_user, workspace, other_workspace, client_for, settings
):
    """The default limit, 2 runs per user: each user's third variant waits, visibly
    ("waiting for a run slot" in its column), whatever the other user runs, and starts
    when one of that user's own ends."""
    settings.PIWEB_USER_MAX_RUNS = 2  # the default (the worker's too)
    alice, bob = make_user(), make_user()
    a_session, a_node = _node(alice, workspace)
    b_session, b_node = _node(bob, other_workspace)
    for n in ("1", "2"):
        llm.push_for(
            f"alice {n}", tool_call("bash", {"command": _gated_write(n)}, call_id=f"a{n}"),
            text(f"Alice {n}."),
        )  # fmt: skip
    llm.push_for("alice 3", text("Alice 3."))
    for n in ("1", "2", "3"):
        llm.push_for(f"bob {n}", text(f"Bob {n}."))
    a_started = alternatives.start(
        a_session, alice, a_node, [alternatives.Variant(f"alice {n}") for n in "123"]
    )
    b_started = alternatives.start(
        b_session, bob, b_node, [alternatives.Variant(f"bob {n}") for n in "123"]
    )
    a_jobs, b_jobs = [s.job for s in a_started], [s.job for s in b_started]

    def held(jobs):
        return [chat.is_held(Job.objects.get(pk=j.pk)) for j in jobs]

    # Each user's third waits for a slot of its own user's; alice's two sent runs do not
    # hold bob's (nor the reverse).
    assert held(a_jobs) == held(b_jobs) == [False, False, True]
    for job, call in zip(a_jobs[:2], ("a1", "a2"), strict=True):
        assert wait_until(lambda j=job, c=call: _running_tool(a_session, j, c), 60)
    columns = reverse("sessions_app:alternatives_columns", args=[a_session.pi_id])
    html = client_for(alice).get(columns, {"at": a_node}).content.decode()
    assert html.count("waiting for a run slot") == 1
    assert held(a_jobs) == [False, False, True]  # still, while alice's two run

    # One of alice's ends: her third starts (and bob's run as the worker frees up).
    (Path(a_started[0].workspace.path) / "go").write_text("")
    assert wait_until(lambda: _status(a_jobs[0]) == "done", 60)
    assert wait_until(lambda: _status(a_jobs[2]) == "done", 90)
    assert wait_until(lambda: all(_status(j) == "done" for j in b_jobs), 90)
    assert _status(a_jobs[1]) == "running"  # (alice's second is still in its command)
    (Path(a_started[1].workspace.path) / "go").write_text("")
    assert wait_until(lambda: _status(a_jobs[1]) == "done", 60)
    html = client_for(alice).get(columns, {"at": a_node}).content.decode()
    assert "waiting for a run slot" not in html
    for jobs in (a_jobs, b_jobs):
        jobs[:] = [Job.objects.get(pk=j.pk) for j in jobs]
        first_end = min(j.finished_at for j in jobs[:2])
        assert jobs[2].started_at >= first_end  # the third started once one had ended


def test_stop_all_stops_the_running_and_leaves_the_finished(worker, llm, make_user, workspace):
    """ "Stop all" stops the running variant and leaves the finished one as it is; the
    finished one was checked, the stopped one is not ("stopped, no check")."""
    owner = make_user()
    session, node = _node(owner, workspace)
    llm.push_for("quick one", text("Quick."))
    llm.push_for("slow one", tool_call("bash", {"command": _gated_write("never")}, call_id="slow"))
    variants = [alternatives.Variant("quick one"), alternatives.Variant("slow one")]
    started = alternatives.start(session, owner, node, variants, check="true")
    quick, slow = (s.job for s in started)
    assert wait_until(lambda: _status(quick) == "done", 60)
    assert wait_until(lambda: "slow" in ((run_state(session, slow) or {}).get("tools") or {}), 60)
    stopped = alternatives.stop_all(session, owner, [quick, slow])
    assert [j.pk for j in stopped] == [slow.pk]
    assert wait_until(lambda: _status(slow) == "cancelled", 30)
    assert _status(quick) == "done"
    done, cut = comparison(session, [quick, slow])
    assert done["check_exit"] == 0 and done["answer"] == "Quick."
    assert cut["check"] is None and cut["check_note"] == "stopped, no check"
    assert not (Path(started[1].workspace.path) / "f.txt").read_text() == "never\n"
