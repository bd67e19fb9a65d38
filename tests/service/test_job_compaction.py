"""The compaction job (and the job runner it goes through), run in this process against the
scripted model (no worker needed): manual / threshold / overflow, split turn, update, leaf
moves while a job runs, retries, idempotency, stale-job recovery. (The compaction settings
are tested in test_job_summaries.py.)"""

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.core.compaction import prepare_compaction
from sessions_app.core.offline_summary import OFFLINE_LABEL
from sessions_app.core.summaries import (
    BRANCH_SUMMARY_PREAMBLE,
    SPLIT_TURN_HEADING,
)
from sessions_app.core.usage import TOOLS_BUCKET
from sessions_app.models import Entry, Job, Session
from sessions_app.selectors import paths
from sessions_app.selectors.llm.catalog import resolve_profile
from sessions_app.selectors.usage import session_breakdown
from sessions_app.services import chat, jobs, sessions
from tests.support.job_sessions import (
    SMALL,
    add_turn,
    assistant_call,
    check_compacted_context,
    entries_of_type,
    make_session,
    tool_result,
    user,
)
from tests.support.pi1_session import import_pi1_session, jsonl_bytes
from tests.support.pi_costs import pi_priced
from tests.support.scripted_llm import context_overflow, error, hang, text, user_text
from tests.support.workspaces import place_workspace

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("no_worker_for_these_jobs"),
]

SUMMARY = "## Goal\nShip the thing.\n\n## Progress\n### Done\n- [x] looked at files"


@pytest.fixture(autouse=True)
def _fast_retries(settings):
    settings.PIWEB_LLM_RETRY_BASE_DELAY = 0.05
    settings.PIWEB_LLM_RETRY_MAX_DELAY = 0.2


def run_in_thread(job_id):
    from django.db import connection

    try:
        jobs.run_job(job_id)
    finally:
        connection.close()


def _user_prompt(request_body):
    return user_text(request_body["messages"][-1])


@pytest.mark.embedded
def test_manual_compaction_with_focus_reaches_the_model(make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    before = paths.load_path(session)
    llm.push(text(SUMMARY))
    job = jobs.request_compaction(session, actor=owner, focus="the parser bug in module_2")
    assert job.status == "queued" and job.prepared_leaf_pi_id == session.leaf.pi_id
    assert jobs.run_job(job.id) == "done"
    job.refresh_from_db()
    assert job.status == "done" and job.attempts == 1 and job.finished_at
    assert len(llm.requests) == 1
    body = llm.requests[0]
    assert body["model"] == "scripted-model"
    assert body["messages"][0]["role"] == "system"
    assert "Additional focus: the parser bug in module_2" in _user_prompt(body)
    assert "<conversation>" in _user_prompt(body)
    # 0.8 x reserve, capped by the profile's max output; the field pi 0.80.2 sends
    assert body["max_completion_tokens"] == 4096 and "max_tokens" not in body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    check_compacted_context(session, job, before, [SUMMARY])
    assert job.result_entry.payload["details"].get("offline") is None
    assert session.leaf_id == job.result_entry_id
    # Only one compaction may be active: asking twice gives the same job.
    llm.push(text(SUMMARY))
    add_turn(session, 5)
    first = jobs.request_compaction(session, actor=owner)
    second = jobs.request_compaction(session, actor=owner, focus="other")
    assert first.pk == second.pk


@pytest.mark.embedded
def test_offline_summarizer_when_no_model_is_configured(make_user, llm, settings):
    settings.PIWEB_LLM_BASE_URL = ""
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL, model_profile="nothing-here")
    before = paths.load_path(session)
    job = jobs.request_compaction(session, actor=owner, focus="module_1")
    assert jobs.run_job(job.id) == "done"
    job.refresh_from_db()
    assert llm.requests == []
    payload = job.result_entry.payload
    assert payload["details"]["offline"] is True
    assert payload["summary"].startswith(OFFLINE_LABEL)
    assert job.model == "offline summarizer"
    check_compacted_context(session, job, before, None)
    # An offline branch summary is labelled too.
    leaf = session.leaf.pi_id
    first_user = entries_of_type(session, "message")[0]
    bjob = jobs.request_branch_summary(
        session, old_leaf_pi_id=leaf, target_pi_id=first_user.pi_id, actor=owner
    )
    assert jobs.run_job(bjob.id) == "done"
    bjob.refresh_from_db()
    summary = bjob.result_entry.payload["summary"]
    assert summary.startswith(BRANCH_SUMMARY_PREAMBLE + OFFLINE_LABEL)
    assert bjob.result_entry.payload["details"]["offline"] is True


def _split_turn_session(owner, model_profile="scripted"):
    session = sessions.create_session(owner=owner, cwd="/tmp", model_profile=model_profile)
    session.settings = {"compaction": {**SMALL, "keepRecentTokens": 300}}
    session.save()
    add_turn(session, 1)
    # One long turn: many tool calls after a single user message, so the cut lands inside it.
    sessions.append_entry(session, user("Turn 2: refactor everything"))
    for i in range(8):
        call, call_id = assistant_call("edit" if i % 2 else "read", f"pkg/f{i}.py")
        sessions.append_entry(session, call)
        sessions.append_entry(session, tool_result(call_id, "read", "z" * 300))
    session.refresh_from_db()
    return session


def test_split_turn_joins_history_and_turn_prefix(make_user, llm):
    owner = make_user()
    session = _split_turn_session(owner)
    before = paths.load_path(session)
    prep = prepare_compaction(before, session.settings["compaction"])
    assert prep.is_split_turn and prep.turn_prefix_messages
    llm.push(text("HISTORY SUMMARY"), text("TURN PREFIX SUMMARY"))
    job = jobs.request_compaction(session, actor=owner)
    assert jobs.run_job(job.id) == "done"
    job.refresh_from_db()
    assert len(llm.requests) == 2
    assert "FIRST PART of a single turn" in _user_prompt(llm.requests[1])
    summary = job.result_entry.payload["summary"]
    assert summary.startswith("HISTORY SUMMARY\n\n---\n\n" + SPLIT_TURN_HEADING)
    assert "TURN PREFIX SUMMARY" in summary
    assert "pkg/f1.py" in job.result_entry.payload["details"]["modifiedFiles"]
    check_compacted_context(
        session, job, before, ["HISTORY SUMMARY", "TURN PREFIX SUMMARY"], split=True
    )


def test_a_compaction_carries_its_history_and_turn_prefix_cost_as_pi_prices_them(make_user, llm):
    owner = make_user()
    session = _split_turn_session(owner, model_profile="scripted-cloud")
    spent_before = session.usage_cost
    history = {"prompt_tokens": 9000, "completion_tokens": 800, "total_tokens": 9800}
    prefix = {
        "prompt_tokens": 4000,
        "completion_tokens": 300,
        "total_tokens": 4300,
        "prompt_tokens_details": {"cached_tokens": 1000},
    }
    llm.push(text("HISTORY", usage=history), text("PREFIX", usage=prefix))
    job = jobs.request_compaction(session, actor=owner)
    assert jobs.run_job(job.id) == "done"
    job.refresh_from_db()
    usage = job.result_entry.payload["usage"]
    assert "usage" not in job.progress  # the cost lives on the entry, once
    model = resolve_profile("scripted-cloud").resolved().model
    history_usage = {"input": 9000, "output": 800, "cacheRead": 0, "cacheWrite": 0}
    prefix_usage = {"input": 3000, "output": 300, "cacheRead": 1000, "cacheWrite": 0}
    theirs = pi_priced(
        model, [{**history_usage, "totalTokens": 9800}, {**prefix_usage, "totalTokens": 4300}]
    )["combined"]
    for key in ("input", "output", "cacheRead", "cacheWrite", "totalTokens"):
        assert usage[key] == theirs[key], key
    for key in ("input", "output", "cacheRead", "cacheWrite", "total"):
        assert usage["cost"][key] == pytest.approx(theirs["cost"][key], rel=1e-12), key
    # The usage totals count it once, in pi's "Tools/summaries" bucket.
    session.refresh_from_db()
    assert session.usage_cost == pytest.approx(spent_before + usage["cost"]["total"])
    buckets = {row["key"]: row for row in session_breakdown(session)}
    assert buckets[TOOLS_BUCKET]["cost"] == pytest.approx(usage["cost"]["total"])
    assert buckets[TOOLS_BUCKET]["tokens"] == 9000 + 800 + 3000 + 300 + 1000


def test_second_compaction_updates_the_first(make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    llm.push(text("FIRST SUMMARY"))
    first = jobs.request_compaction(session, actor=owner)
    jobs.run_job(first.id)
    first.refresh_from_db()
    first_files = first.result_entry.payload["details"]["readFiles"]
    assert first_files
    for n in range(5, 8):
        add_turn(session, n, tool="edit", path=f"lib/new_{n}.py")
    session.refresh_from_db()
    before = paths.load_path(session)
    llm.push(text("SECOND SUMMARY"))
    second = jobs.request_compaction(session, actor=owner)
    assert second.pk != first.pk
    jobs.run_job(second.id)
    second.refresh_from_db()
    prompt = _user_prompt(llm.requests[1])
    assert "<previous-summary>\nFIRST SUMMARY" in prompt
    details = second.result_entry.payload["details"]
    assert set(first_files) <= set(details["readFiles"]) | set(details["modifiedFiles"])
    assert "lib/new_6.py" in details["modifiedFiles"]
    check_compacted_context(session, second, before, ["SECOND SUMMARY"])


@pytest.mark.embedded
def test_threshold_trigger_respects_enabled(make_user, llm):
    owner = make_user()
    # Window 128000 (scripted profile); a reserve of 127500 puts the threshold at 500.
    session = make_session(
        owner, turns=3, compaction={**SMALL, "reserveTokens": 127500, "enabled": False}
    )
    assert jobs.maybe_compact_after_run(session) is None  # disabled: no trigger
    session.settings["compaction"]["enabled"] = True
    session.save()
    low = make_session(owner, turns=1, compaction={**SMALL, "reserveTokens": 16384})
    assert jobs.maybe_compact_after_run(low) is None  # far below the threshold
    assert jobs.context_tokens_at_leaf(session) > 500
    job = jobs.maybe_compact_after_run(session)
    assert job is not None and job.params["trigger"] == "threshold"
    llm.push(text(SUMMARY))
    assert jobs.run_job(job.id) == "done"


@pytest.mark.embedded
def test_overflow_compacts_synchronously_and_never_loops(make_user, llm):
    owner = make_user()
    disabled = make_session(owner, turns=3, compaction={**SMALL, "enabled": False})
    assert jobs.compact_for_overflow(disabled) is None  # pi bug: overflow bypassed this
    assert not Job.objects.filter(session=disabled).exists()

    session = make_session(owner, turns=4, compaction=SMALL)
    before = paths.load_path(session)
    llm.push(text(SUMMARY))
    job = jobs.compact_for_overflow(session)
    assert job.status == "done" and job.result_entry_id
    assert job.params["trigger"] == "overflow"
    check_compacted_context(session, job, before, [SUMMARY])
    # Overflow again at once: nothing new to compact, so no entry -> the caller must
    # report the error instead of retrying.
    again = jobs.compact_for_overflow(session)
    assert again.status == "done" and again.result_entry_id is None
    assert len(entries_of_type(session, "compaction")) == 1
    # A model that overflows on the summary itself fails the job (no loop either).
    add_turn(session, 9)
    llm.push(context_overflow())
    failed = jobs.compact_for_overflow(session)
    assert failed.status == "failed" and "400" in failed.error
    assert len(llm.requests) == 2


def test_provider_errors_are_retried_with_a_cap(make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    llm.push(error(500), error(502), error(429, type_="rate_limit"), text(SUMMARY))
    job = jobs.request_compaction(session, actor=owner)
    assert jobs.run_job(job.id) == "done"
    job.refresh_from_db()
    assert len(llm.requests) == 4 and job.progress["model_calls"] == 4
    assert len(entries_of_type(session, "compaction")) == 1
    # Past the cap (1 + PIWEB_LLM_RETRIES calls) the job fails, visibly.
    add_turn(session, 5)
    llm.reset()
    llm.push(*[error(503)] * 5)
    job2 = jobs.request_compaction(session, actor=owner)
    assert jobs.run_job(job2.id) == "failed"
    job2.refresh_from_db()
    assert "503" in job2.error and "after 5 calls" in job2.error
    assert len(llm.requests) == 5
    # A client error is not retried.
    llm.reset()
    llm.push(error(401, "bad key", type_="auth"))
    job3 = jobs.request_compaction(session, actor=owner)
    assert jobs.run_job(job3.id) == "failed"
    assert len(llm.requests) == 1


def test_dropped_connection_is_retried(make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    llm.push(hang(0.1), text(SUMMARY))
    job = jobs.request_compaction(session, actor=owner)
    assert jobs.run_job(job.id) == "done"
    assert len(llm.requests) == 2


@pytest.mark.embedded
def test_compaction_appends_at_the_current_leaf_when_the_leaf_moved_on(make_user, llm):
    """Decision: a new message during a compaction proceeds; no turn is lost."""
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    before = paths.load_path(session)
    llm.push(text(SUMMARY, delay_before=1.0))
    job = jobs.request_compaction(session, actor=owner)
    runner = threading.Thread(target=run_in_thread, args=(job.id,))
    runner.start()
    try:
        jobs_wait_running(job)
        last = add_turn(session, 5)  # a whole new turn arrives while the model works
    finally:
        runner.join(30)
    job.refresh_from_db()
    assert job.status == "done"
    assert job.result_entry.parent_id == last.pk
    ctx = check_compacted_context(session, job, before, [SUMMARY])
    assert any(m.get("content") == "Done with turn 5." or "Turn 5" in str(m) for m in ctx)


def jobs_wait_running(job, timeout=10):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status == "running":
            return
        time.sleep(0.02)
    raise AssertionError("job did not start")


def test_compaction_is_superseded_when_the_user_moved_to_another_branch(make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    first_answer = entries_of_type(session, "message")[3]
    job = jobs.request_compaction(session, actor=owner)
    sessions.set_leaf(session, first_answer.pi_id)
    sessions.append_entry(session, user("another branch"))
    llm.push(text(SUMMARY))
    assert jobs.run_job(job.id) == "superseded"
    job.refresh_from_db()
    assert job.result_entry is None and "another branch" in job.progress["note"]
    assert entries_of_type(session, "compaction") == []


def test_run_job_is_idempotent(make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    llm.push(text(SUMMARY))
    job = jobs.request_compaction(session, actor=owner)
    assert jobs.run_job(job.id) == "done"
    assert jobs.run_job(job.id) is None  # a redelivered task: nothing to do
    assert jobs.run_job(job.id) is None
    assert len(entries_of_type(session, "compaction")) == 1
    assert len(llm.requests) == 1
    assert jobs.run_job("00000000-0000-0000-0000-000000000000") is None


def test_a_presumed_dead_run_writes_nothing(make_user, llm):
    """A slow worker that was taken over must not add a second entry when it wakes."""
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    llm.push(text("SLOW", delay_before=1.0), text("FAST"))
    job = jobs.request_compaction(session, actor=owner)
    slow = threading.Thread(target=run_in_thread, args=(job.id,))
    slow.start()
    jobs_wait_running(job)
    deadline = time.monotonic() + 10  # its request has reached the model (it got "SLOW")
    while not llm.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert llm.requests
    # Pretend its heartbeat went silent and someone else took over.
    Job.objects.filter(pk=job.pk).update(
        heartbeat_at=timezone.now() - timedelta(hours=1), params={**job.params, "worker": {}}
    )
    assert jobs.run_job(job.id) == "done"
    slow.join(30)
    assert len(entries_of_type(session, "compaction")) == 1
    job.refresh_from_db()
    assert job.attempts == 2 and job.result_entry.payload["summary"].startswith("FAST")


def test_stale_jobs_are_requeued_then_failed(make_user, llm, settings):
    settings.PIWEB_JOB_MAX_ATTEMPTS = 2
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    job = jobs.request_compaction(session, actor=owner)
    old = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS + 5)
    Job.objects.filter(pk=job.pk).update(status="running", attempts=1, heartbeat_at=old)
    assert jobs.sweep_stale_jobs(session=session) == [str(job.pk)]
    job.refresh_from_db()
    assert job.status == "queued" and job.progress["phase"] == "requeued"
    # A dead worker process on this host is noticed at once, without waiting.
    Job.objects.filter(pk=job.pk).update(
        status="running",
        attempts=2,
        heartbeat_at=timezone.now(),
        params={
            **job.params,
            "worker": {"host": __import__("socket").gethostname(), "pid": 2**22 + 7},
        },
    )
    assert jobs.sweep_stale_jobs() == [str(job.pk)]
    job.refresh_from_db()
    assert job.status == "failed" and "Gave up after 2 attempts" in job.error
    # A live, fresh job is left alone.
    add_turn(session, 5)
    fresh = jobs.request_compaction(session, actor=owner)
    Job.objects.filter(pk=fresh.pk).update(
        status="running", attempts=1, heartbeat_at=timezone.now()
    )
    assert jobs.sweep_stale_jobs(session=session) == []


def test_request_validation(make_user):
    owner = make_user()
    empty = sessions.create_session(owner=owner, cwd="/tmp")
    with pytest.raises(jobs.JobError):
        jobs.request_compaction(empty, actor=owner)
    session = make_session(owner, turns=1)
    with pytest.raises(jobs.JobError):
        jobs.request_compaction(session, actor=owner, focus="x" * 5000)
    with pytest.raises(jobs.JobError):
        jobs.request_branch_summary(
            session, old_leaf_pi_id=session.leaf.pi_id, target_pi_id="nope", actor=owner
        )
    assert not Entry.objects.filter(session=session, type="compaction").exists()


def test_compaction_waits_for_an_active_agent_run_then_appends_after_it(make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    before = paths.load_path(session)
    run = Job.objects.create(session=session, kind="agent_run", status="running")
    llm.push(text(SUMMARY))
    job = jobs.request_compaction(session, actor=owner)
    runner = threading.Thread(target=run_in_thread, args=(job.id,))
    runner.start()
    try:
        import time

        deadline = time.monotonic() + 10
        while job.progress.get("phase") != "waiting_for_run" and time.monotonic() < deadline:
            time.sleep(0.05)
            job.refresh_from_db()
        assert job.progress.get("phase") == "waiting_for_run"
        last = add_turn(session, 5)  # the run's own entries keep arriving on its branch
        Job.objects.filter(pk=run.pk).update(status="done")
    finally:
        runner.join(30)
    job.refresh_from_db()
    assert job.status == "done" and job.result_entry.parent_id == last.pk
    check_compacted_context(session, job, before, [SUMMARY])
    # The overflow path is called from inside the run: it must not wait for itself.
    add_turn(session, 6)
    Job.objects.filter(pk=run.pk).update(status="running")
    llm.push(text(SUMMARY))
    overflow = jobs.compact_for_overflow(session)
    assert overflow.status == "done" and overflow.result_entry_id


def test_overflow_takes_over_a_pending_compaction_without_waiting_for_itself(make_user, llm):
    """A threshold compaction is queued when the run hits an overflow: the run's overflow
    recovery takes that job over inline and does not wait for the run (itself)."""
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    before = paths.load_path(session)
    pending = jobs.request_compaction(session, actor=owner, trigger="threshold")
    Job.objects.create(session=session, kind="agent_run", status="running")
    llm.push(text(SUMMARY))
    import time

    started = time.monotonic()
    job = jobs.compact_for_overflow(session)
    assert time.monotonic() - started < 20
    assert job.pk == pending.pk and job.status == "done" and job.result_entry_id
    assert job.params["trigger"] == "overflow" and job.params["first_trigger"] == "threshold"
    check_compacted_context(session, job, before, [SUMMARY])


def test_overflow_compacts_the_runs_branch_even_if_the_user_looks_elsewhere(make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    run_position = session.leaf.pi_id
    before = paths.load_path(session)
    elsewhere = entries_of_type(session, "message")[3]
    sessions.set_leaf(session, elsewhere.pi_id)  # the user browses an older node meanwhile
    llm.push(text(SUMMARY))
    job = jobs.compact_for_overflow(session, leaf_pi_id=run_position)
    assert job.status == "done", job.error
    assert job.result_entry.parent.pi_id == run_position
    session.refresh_from_db()
    assert session.leaf_id == elsewhere.pk  # not pulled away
    sessions.set_leaf(session, job.result_entry.pi_id)
    check_compacted_context(session, job, before, [SUMMARY])


# --- a session holding pi 1.x entries and an unknown entry type ---------------------------
# An agent turn, a compaction and a branch summary run on it (in this process, real
# database, scripted model) without crashing, and the unknown entry is kept as it was.


@pytest.fixture
def pi1_owner(make_user):
    return make_user("pi1-jobs")


@pytest.fixture
def pi1_session(pi1_owner, workspace, redis_ready):
    pi1_session = import_pi1_session(pi1_owner)
    pi1_session.cwd = str(place_workspace(pi1_owner, workspace))
    pi1_session.model_profile = "scripted"
    pi1_session.settings = {"compaction": SMALL}
    pi1_session.save()
    return pi1_session


@pytest.mark.usefixtures("tasks_stay_in_process")
def test_agent_turn_compaction_and_branch_summary_on_pi1_entries(pi1_session, llm):
    pi1_owner = pi1_session.owner
    unknown_line = Entry.objects.get(session=pi1_session, pi_id="b00000x1").line

    llm.push(text("The sleep is fixed."))
    run = chat.send_message(pi1_session, pi1_owner, "is it fixed?")
    assert jobs.run_job(str(run.pk)) == "done"
    run.refresh_from_db()
    assert run.status == "done", run.error
    sent = llm.requests[-1]["messages"]
    assert sent[-1] == {"role": "user", "content": [{"type": "text", "text": "is it fixed?"}]}

    llm.push(text("## Goal\nFix the flaky test."))
    job = jobs.request_compaction(Session.objects.get(pk=pi1_session.pk), actor=pi1_owner)
    jobs.run_job(str(job.pk))
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error

    pi1_session.refresh_from_db()
    llm.push(text("## Goal\nThe branch left behind."))
    job = jobs.request_branch_summary(
        pi1_session, old_leaf_pi_id=pi1_session.leaf.pi_id, target_pi_id="b0000002", actor=pi1_owner
    )
    jobs.run_job(str(job.pk))
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    assert job.result_entry.type == "branch_summary"

    # The entries pi wrote, the unknown one included, are untouched.
    assert Entry.objects.get(session=pi1_session, pi_id="b00000x1").line == unknown_line
    original = jsonl_bytes().decode().splitlines()[1:]
    stored = [e.line for e in Entry.objects.filter(session=pi1_session).order_by("seq")]
    assert stored[: len(original)] == original
    assert paths.load_context(Session.objects.get(pk=pi1_session.pk))["messages"]
