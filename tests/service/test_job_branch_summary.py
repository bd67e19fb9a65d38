"""The branch summary job, run in this process against the scripted model (no worker
needed): custom instructions, a replaced prompt, double clicks, a leaf that moved on."""

import threading

import pytest

from sessions_app.core.messages import build_session_context
from sessions_app.core.summaries import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
)
from sessions_app.core.usage import TOOLS_BUCKET
from sessions_app.models import Job
from sessions_app.selectors import paths
from sessions_app.selectors.llm.catalog import resolve_profile
from sessions_app.selectors.usage import session_breakdown
from sessions_app.services import jobs, sessions
from tests.support.job_sessions import (
    add_turn,
    entries_of_type,
    make_session,
    user,
)
from tests.support.pi_costs import pi_priced
from tests.support.scripted_llm import text, user_text

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("no_worker_for_these_jobs"),
]


@pytest.fixture(autouse=True)
def _fast_retries(settings):
    settings.PIWEB_LLM_RETRY_BASE_DELAY = 0.05
    settings.PIWEB_LLM_RETRY_MAX_DELAY = 0.2


def _user_prompt(request_body):
    return user_text(request_body["messages"][-1])


def _branchy_session(owner, model_profile="scripted"):
    """root turn 1 -> turn 2 -> turn 3 (leaf); we navigate back to turn 1's answer."""
    session = make_session(owner, turns=1, model_profile=model_profile)
    answer1 = session.leaf.pi_id
    add_turn(session, 2, tool="edit", path="app/edited.py")
    add_turn(session, 3)
    session.refresh_from_db()
    return session, answer1


@pytest.mark.embedded
def test_branch_summary_with_custom_instructions(make_user, llm):
    owner = make_user()
    session, answer1 = _branchy_session(owner)
    old_leaf = session.leaf.pi_id
    llm.push(text("BRANCH TEXT"))
    job = jobs.request_branch_summary(
        session,
        old_leaf_pi_id=old_leaf,
        target_pi_id=answer1,
        actor=owner,
        custom_instructions="focus on the edits",
    )
    session.refresh_from_db()
    assert session.leaf.pi_id == answer1  # the leaf moved at once
    assert jobs.run_job(job.id) == "done"
    job.refresh_from_db()
    body = llm.requests[0]
    assert body["max_completion_tokens"] == 2048
    prompt = _user_prompt(body)
    assert BRANCH_SUMMARY_PROMPT in prompt and "Additional focus: focus on the edits" in prompt
    assert "Turn 2" in prompt and "Turn 3" in prompt and "Turn 1" not in prompt
    entry = job.result_entry
    assert entry.parent.pi_id == answer1
    assert entry.payload["fromId"] == answer1
    assert entry.payload["summary"].startswith(BRANCH_SUMMARY_PREAMBLE + "BRANCH TEXT")
    assert entry.payload["details"]["modifiedFiles"] == ["app/edited.py"]
    assert "<modified-files>\napp/edited.py\n</modified-files>" in entry.payload["summary"]
    session.refresh_from_db()
    assert session.leaf_id == entry.pk
    ctx = build_session_context(paths.load_path(session))["messages"]
    assert ctx[-1]["role"] == "branchSummary" and ctx[-1]["summary"] == entry.payload["summary"]
    assert [m["role"] for m in ctx[:-1]] == ["user", "assistant", "toolResult", "assistant"]


def test_a_branch_summary_carries_its_cost_as_pi_prices_it_counted_once(make_user, llm):
    owner = make_user()
    session, answer1 = _branchy_session(owner, model_profile="scripted-cloud")
    spent_before = session.usage_cost
    wire = {
        "prompt_tokens": 6000,
        "completion_tokens": 450,
        "total_tokens": 6450,
        "prompt_tokens_details": {"cached_tokens": 2500},
    }
    llm.push(text("BRANCH TEXT", usage=wire))
    job = jobs.request_branch_summary(
        session, old_leaf_pi_id=session.leaf.pi_id, target_pi_id=answer1, actor=owner
    )
    assert jobs.run_job(job.id) == "done"
    job.refresh_from_db()
    usage = job.result_entry.payload["usage"]
    assert (usage["input"], usage["cacheRead"], usage["output"]) == (3500, 2500, 450)
    model = resolve_profile("scripted-cloud").resolved().model
    (theirs,) = pi_priced(model, [usage])["priced"]
    for key in ("input", "output", "cacheRead", "cacheWrite", "total"):
        assert usage["cost"][key] == pytest.approx(theirs["cost"][key], rel=1e-12), key
    session.refresh_from_db()
    assert session.usage_cost == pytest.approx(spent_before + usage["cost"]["total"])
    buckets = {row["key"]: row for row in session_breakdown(session)}
    assert buckets[TOOLS_BUCKET]["cost"] == pytest.approx(theirs["cost"]["total"])
    assert buckets[TOOLS_BUCKET]["tokens"] == 3500 + 2500 + 450


def test_branch_summary_replace_prompt_and_user_target(make_user, llm):
    owner = make_user()
    session, _answer1 = _branchy_session(owner)
    old_leaf = session.leaf.pi_id
    turn2_user = [e for e in entries_of_type(session, "message") if e.role == "user"][1]
    llm.push(text("ONLY MY PROMPT"))
    job = jobs.request_branch_summary(
        session,
        old_leaf_pi_id=old_leaf,
        target_pi_id=turn2_user.pi_id,
        actor=owner,
        custom_instructions="List only the file names.",
        replace_prompt=True,
    )
    # A user-message target: the new position is its parent, its text goes to the editor.
    assert job.params["position"] == turn2_user.parent.pi_id
    assert job.params["editor_text"].startswith("Turn 2:")
    jobs.run_job(job.id)
    job.refresh_from_db()
    prompt = _user_prompt(llm.requests[0])
    assert prompt.rstrip().endswith("List only the file names.")
    assert BRANCH_SUMMARY_PROMPT not in prompt
    assert job.result_entry.parent_id == turn2_user.parent_id
    with pytest.raises(jobs.JobError):
        jobs.request_branch_summary(
            session,
            old_leaf_pi_id=old_leaf,
            target_pi_id=turn2_user.pi_id,
            actor=owner,
            replace_prompt=True,
        )


def test_branch_summary_dedupes_double_clicks(make_user, llm):
    owner = make_user()
    session, answer1 = _branchy_session(owner)
    old_leaf = session.leaf.pi_id
    results = []

    def click():
        from django.db import connection

        try:
            results.append(
                jobs.request_branch_summary(
                    session, old_leaf_pi_id=old_leaf, target_pi_id=answer1, actor=owner
                ).pk
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=click) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1 and len(results) == 4
    assert Job.objects.filter(session=session, kind="branch_summary").count() == 1
    # The tree view computes the old leaf from the server's leaf: a second click then
    # names the first job's position as its old leaf. Still the same job.
    session.refresh_from_db()
    assert session.leaf.pi_id == answer1
    again = jobs.request_branch_summary(
        session, old_leaf_pi_id=session.leaf.pi_id, target_pi_id=answer1, actor=owner
    )
    assert again.pk == results[0]
    llm.push(text("ONE"))
    jobs.run_job(results[0])
    assert len(entries_of_type(session, "branch_summary")) == 1


def test_branch_summary_does_not_steal_a_moved_leaf(make_user, llm):
    owner = make_user()
    session, answer1 = _branchy_session(owner)
    old_leaf = session.leaf.pi_id
    job = jobs.request_branch_summary(
        session, old_leaf_pi_id=old_leaf, target_pi_id=answer1, actor=owner
    )
    # The user went on typing at the new position before the summary came back.
    typed = sessions.append_entry(session, user("new direction"))
    llm.push(text("LATE SUMMARY"))
    jobs.run_job(job.id)
    job.refresh_from_db()
    session.refresh_from_db()
    assert job.result_entry.parent.pi_id == answer1  # attached where it belongs
    assert session.leaf_id == typed.pk  # and the leaf stayed with the user
    assert job.progress["leaf_moved"] is False
