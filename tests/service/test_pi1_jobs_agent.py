"""A session holding pi 1.x entries and an unknown entry type: an agent turn, a
compaction and a branch summary run on it (in this process, real database, scripted
model) without crashing, and the unknown entry is kept as it was."""

from __future__ import annotations

import pytest

from sessions_app.models import Entry, Job, Session
from sessions_app.services import chat, jobs, sessions
from tests.support.job_sessions import SMALL
from tests.support.pi1_session import import_pi1_session, jsonl_bytes
from tests.support.scripted_llm import text

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tasks_stay_in_process"),
]


@pytest.fixture
def owner(make_user):
    return make_user("pi1-jobs")


@pytest.fixture
def session(owner, workspace, redis_ready):
    session = import_pi1_session(owner)
    session.cwd = str(workspace)
    session.model_profile = "scripted"
    session.settings = {"compaction": SMALL}
    session.save()
    return session


def test_agent_turn_compaction_and_branch_summary_on_pi1_entries(session, llm):
    owner = session.owner
    unknown_line = Entry.objects.get(session=session, pi_id="b00000x1").line

    llm.push(text("The sleep is fixed."))
    run = chat.send_message(session, owner, "is it fixed?")
    assert chat.execute_run(str(run.pk)) == "done"
    run.refresh_from_db()
    assert run.status == "done", run.error
    sent = llm.requests[-1]["messages"]
    assert sent[-1] == {"role": "user", "content": [{"type": "text", "text": "is it fixed?"}]}

    llm.push(text("## Goal\nFix the flaky test."))
    job = jobs.request_compaction(Session.objects.get(pk=session.pk), actor=owner)
    jobs.run_job(str(job.pk))
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error

    session.refresh_from_db()
    llm.push(text("## Goal\nThe branch left behind."))
    job = jobs.request_branch_summary(
        session, old_leaf_pi_id=session.leaf.pi_id, target_pi_id="b0000002", actor=owner
    )
    jobs.run_job(str(job.pk))
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    assert job.result_entry.type == "branch_summary"

    # The entries pi wrote, the unknown one included, are untouched.
    assert Entry.objects.get(session=session, pi_id="b00000x1").line == unknown_line
    original = jsonl_bytes().decode().splitlines()[1:]
    stored = [e.line for e in Entry.objects.filter(session=session).order_by("seq")]
    assert stored[: len(original)] == original
    assert sessions.load_context(Session.objects.get(pk=session.pk))["messages"]
