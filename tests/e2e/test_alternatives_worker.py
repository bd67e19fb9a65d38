"""Alternatives (issue 36) through the real worker, with scripted models: variants of one
step run as sibling branches, each in its own copy of the node's files, within the
user's run limit; the check runs in each and is recorded; "Stop all" (the command line: tests/service/test_alternatives_command.py)."""

import json
from pathlib import Path

import pytest

from sessions_app.models import Entry, Job
from sessions_app.selectors.alternatives import comparison
from sessions_app.selectors.runs import run_state
from sessions_app.services import alternatives, chat
from tests.support.agent_runs import new_session, wait_run
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


def test_variants_run_in_their_own_copies_within_the_limit_and_are_checked(
    worker, llm, make_user, workspace, settings
):
    settings.PIWEB_USER_MAX_RUNS = 2  # the default (the worker's too)
    owner = make_user()
    session, node = _node(owner, workspace)
    llm.push_for(
        "variant one",
        tool_call("bash", {"command": _gated_write("good")}, call_id="v1"),
        text("One: wrote good."),
    )
    llm.push_for(
        "variant two",
        tool_call("bash", {"command": _gated_write("bad")}, call_id="v2"),
        text("Two: wrote bad."),
    )
    llm.push_for("variant three", error(400, "variant three is refused"))
    variants = [alternatives.Variant(f"variant {n}") for n in ("one", "two", "three")]
    started = alternatives.start(session, owner, node, variants, check="grep -q good f.txt")
    jobs = [s.job for s in started]
    assert [s.workspace.source for s in started] == ["snapshot"] * 3

    # Two run at once; the third waits, visibly, behind them.
    for job, call in zip(jobs[:2], ("v1", "v2"), strict=True):
        assert wait_until(
            lambda j=job, c=call: c in ((run_state(session, j) or {}).get("tools") or {}), 60
        )
    assert chat.is_held(Job.objects.get(pk=jobs[2].pk))
    assert comparison(session, jobs)[2]["held"]

    # One ends: the third starts, and its provider's error leaves the other running.
    (Path(started[0].workspace.path) / "go").write_text("")
    assert wait_until(lambda: _status(jobs[0]) == "done", 60)
    assert wait_until(lambda: _status(jobs[2]) == "failed", 60)
    assert _status(jobs[1]) == "running"
    (Path(started[1].workspace.path) / "go").write_text("")
    assert wait_until(lambda: _status(jobs[1]) == "done", 60)

    # Each edited its own copy of the node's files; the session's folder is untouched.
    contents = [(Path(s.workspace.path) / "f.txt").read_text() for s in started]
    assert contents == ["good\n", "bad\n", "node\n"]
    assert (workspace / "f.txt").read_text() == "later\n"
    # No variant saw another's messages.
    for request in llm.requests:
        seen = json.dumps(request["messages"])
        assert sum(f"variant {n}" in seen for n in ("one", "two", "three")) == 1

    # The comparison: answers, check results (a piweb.check entry each), files, the error.
    one, two, three = comparison(session, jobs)
    assert one["answer"] == "One: wrote good." and two["answer"] == "Two: wrote bad."
    assert (one["check_exit"], two["check_exit"], three["check_exit"]) == (0, 1, None)
    assert one["files_changed"] == two["files_changed"] == ["f.txt", "go"]  # (the gate too)
    assert three["status"] == "failed" and "variant three is refused" in three["answer"]
    assert one["turns"] == 2 and one["seconds"] > 0
    checks = Entry.objects.filter(session=session, type="custom")
    checks = [e.payload["data"] for e in checks if e.payload.get("customType") == "piweb.check"]
    assert sorted(c["exitCode"] for c in checks) == [0, 1]
    assert all(c["command"] == "grep -q good f.txt" and c["seconds"] >= 0 for c in checks)
    # Sibling branches of the node.
    heads = Entry.objects.filter(session=session, parent__pi_id=node)
    assert {e.pi_id for e in heads} == {s.head_pi_id for s in started}


def test_stop_all_stops_the_running_and_leaves_the_finished(worker, llm, make_user, workspace):
    owner = make_user()
    session, node = _node(owner, workspace)
    llm.push_for("quick one", text("Quick."))
    llm.push_for("slow one", tool_call("bash", {"command": _gated_write("never")}, call_id="slow"))
    variants = [alternatives.Variant("quick one"), alternatives.Variant("slow one")]
    started = alternatives.start(session, owner, node, variants)
    quick, slow = (s.job for s in started)
    assert wait_until(lambda: _status(quick) == "done", 60)
    assert wait_until(lambda: "slow" in ((run_state(session, slow) or {}).get("tools") or {}), 60)
    stopped = alternatives.stop_all(session, owner, [quick, slow])
    assert [j.pk for j in stopped] == [slow.pk]
    assert wait_until(lambda: _status(slow) == "cancelled", 30)
    assert _status(quick) == "done"
