"""Compaction and branch-summary jobs through a real Celery worker process, real Redis
and the scripted OpenAI-compatible server; every result is checked against the pure
core's idea of the context at the leaf. And the search indexing job after an import."""

import asyncio
import json
from datetime import timedelta

import pytest
import websockets
from django.utils import timezone

from sessions_app.core.offline_summary import OFFLINE_LABEL
from sessions_app.core.summaries import BRANCH_SUMMARY_PREAMBLE, SPLIT_TURN_HEADING
from sessions_app.models import Job, SearchDocument
from sessions_app.selectors import paths, search
from sessions_app.services import jobs, sessions
from sessions_app.services.importer import import_jsonl_stream
from sessions_app.services.jobs import lifecycle
from sessions_app.services.jobs.search_index import request_index
from sessions_app.tasks import run_summary_job
from tests.support.job_sessions import (
    SMALL,
    add_turn,
    assistant_call,
    check_compacted_context,
    entries_of_type,
    make_session,
    tool_result,
    user,
    wait_for_job,
)
from tests.support.pi_files import as_file, header, jsonl_text, message
from tests.support.scripted_llm import error, last_text, text
from tests.support.waiting import wait_until
from tests.support.web import session_cookie_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

SUMMARY = "## Goal\nKeep the parser fast.\n\n## Next Steps\n1. profile it"


def wait_status(job, status, timeout=30):
    return wait_for_job(job, timeout, statuses=(status,))


def wait_requests(llm, n, timeout=30):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(llm.requests) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"the model got {len(llm.requests)} requests, expected {n}")


@pytest.mark.embedded
def test_manual_compaction_with_focus_in_the_worker(worker, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    before = paths.load_path(session)
    llm.push(text(SUMMARY))
    job = jobs.request_compaction(session, actor=owner, focus="the tokenizer cache")
    wait_for_job(job)
    assert job.status == "done", job.error
    assert "Additional focus: the tokenizer cache" in last_text(llm.requests[0])
    assert job.model == "scripted: scripted-model"
    check_compacted_context(session, job, before, [SUMMARY])


@pytest.mark.embedded
def test_offline_summarizer_in_the_worker(worker, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL, model_profile="no-such-model")
    before = paths.load_path(session)
    job = jobs.request_compaction(session, actor=owner)
    wait_for_job(job)
    assert job.status == "done", job.error
    assert llm.requests == []
    payload = job.result_entry.payload
    assert payload["details"]["offline"] is True and payload["summary"].startswith(OFFLINE_LABEL)
    check_compacted_context(session, job, before, None)


def test_threshold_after_a_run_then_update_with_file_lists(worker, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction={**SMALL, "reserveTokens": 127500})
    llm.push(text("FIRST"))
    job = jobs.maybe_compact_after_run(session)
    assert job is not None
    wait_for_job(job)
    assert job.status == "done", job.error
    first_read = job.result_entry.payload["details"]["readFiles"]
    for n in range(5, 8):
        add_turn(session, n, tool="write", path=f"out/gen_{n}.py", usage_total=900 + n)
    session.refresh_from_db()
    before = paths.load_path(session)
    llm.push(text("SECOND"))
    second = jobs.maybe_compact_after_run(session)
    wait_for_job(second)
    assert second.status == "done", second.error
    assert "<previous-summary>\nFIRST" in last_text(llm.requests[1])
    details = second.result_entry.payload["details"]
    assert set(first_read) <= set(details["readFiles"])
    assert "out/gen_6.py" in details["modifiedFiles"]
    check_compacted_context(session, second, before, ["SECOND"])


def test_split_turn_in_the_worker(worker, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=1, compaction={**SMALL, "keepRecentTokens": 300})
    sessions.append_entry(session, user("one long turn"))
    for i in range(8):
        call, call_id = assistant_call("read", f"long/f{i}.py")
        sessions.append_entry(session, call)
        sessions.append_entry(session, tool_result(call_id, "read", "q" * 300))
    session.refresh_from_db()
    before = paths.load_path(session)
    llm.push(text("H"), text("T"))
    job = jobs.request_compaction(session, actor=owner)
    wait_for_job(job)
    assert job.status == "done", job.error
    assert SPLIT_TURN_HEADING in job.result_entry.payload["summary"]
    check_compacted_context(session, job, before, ["H", "T"], split=True)


def test_overflow_recovery_runs_inline_without_the_queue(worker, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    before = paths.load_path(session)
    llm.push(text(SUMMARY))
    job = jobs.compact_for_overflow(session)
    assert job.status == "done" and job.result_entry_id
    check_compacted_context(session, job, before, [SUMMARY])
    # The worker may also get the message later (a redelivery): still one entry.
    assert len(entries_of_type(session, "compaction")) == 1


def test_new_turn_during_compaction_is_kept(worker, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    before = paths.load_path(session)
    llm.push(text(SUMMARY, delay_before=2.0))
    job = jobs.request_compaction(session, actor=owner)
    wait_status(job, "running")
    wait_requests(llm, 1)
    last = add_turn(session, 5)  # the user keeps chatting while the model summarizes
    wait_for_job(job)
    assert job.status == "done", job.error
    assert job.result_entry.parent_id == last.pk
    ctx = check_compacted_context(session, job, before, [SUMMARY])
    assert "Done with turn 5." in json.dumps(ctx[-1])


def test_leaf_on_another_branch_supersedes_the_compaction(worker, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    llm.push(text(SUMMARY, delay_before=2.0))
    job = jobs.request_compaction(session, actor=owner)
    wait_status(job, "running")
    wait_requests(llm, 1)
    earlier = entries_of_type(session, "message")[3]
    sessions.set_leaf(session, earlier.pi_id)
    sessions.append_entry(session, user("let us try something else"))
    wait_for_job(job)
    assert job.status == "superseded"
    assert entries_of_type(session, "compaction") == []
    session.refresh_from_db()
    assert session.leaf.payload["message"]["content"] == "let us try something else"


@pytest.mark.embedded
def test_branch_summary_in_the_worker_with_leaf_kept_by_the_user(worker, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=1)
    answer1 = session.leaf.pi_id
    add_turn(session, 2, tool="edit", path="a/b.py")
    session.refresh_from_db()
    old_leaf = session.leaf.pi_id
    llm.push(text("B1"), text("B2", delay_before=1.5))
    job = jobs.request_branch_summary(
        session,
        old_leaf_pi_id=old_leaf,
        target_pi_id=answer1,
        actor=owner,
        custom_instructions="Only list decisions.",
        replace_prompt=True,
    )
    again = jobs.request_branch_summary(
        session, old_leaf_pi_id=old_leaf, target_pi_id=answer1, actor=owner
    )
    assert again.pk == job.pk  # double click: one job
    wait_for_job(job)
    assert job.status == "done", job.error
    prompt = last_text(llm.requests[0])
    assert prompt.rstrip().endswith("Only list decisions.")
    entry = job.result_entry
    assert entry.parent.pi_id == answer1
    assert entry.payload["summary"].startswith(BRANCH_SUMMARY_PREAMBLE + "B1")
    session.refresh_from_db()
    assert session.leaf_id == entry.pk
    # Second navigation: the user types at the new position while the job runs.
    old_leaf = session.leaf.pi_id
    second = jobs.request_branch_summary(
        session, old_leaf_pi_id=old_leaf, target_pi_id=answer1, actor=owner
    )
    typed = sessions.append_entry(session, user("typed while summarizing"))
    wait_for_job(second)
    assert second.status == "done", second.error
    assert second.result_entry.parent.pi_id == answer1
    session.refresh_from_db()
    assert session.leaf_id == typed.pk


def test_provider_500_three_times_then_success(worker, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    before = paths.load_path(session)
    llm.push(error(500), error(500), error(500), text(SUMMARY))
    job = jobs.request_compaction(session, actor=owner)
    wait_for_job(job, timeout=60)
    assert job.status == "done", job.error
    assert len(llm.requests) == 4 and job.progress["model_calls"] == 4
    assert len(entries_of_type(session, "compaction")) == 1
    check_compacted_context(session, job, before, [SUMMARY])


@pytest.mark.embedded
def test_worker_killed_mid_job_completes_once(worker, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    before = paths.load_path(session)
    llm.push(text("NEVER ARRIVES", delay_before=6.0), text("AFTER RESTART"))
    job = jobs.request_compaction(session, actor=owner)
    wait_status(job, "running")
    wait_requests(llm, 1)
    worker.kill(9)
    job.refresh_from_db()
    assert job.status == "running"  # what a dead worker leaves behind
    worker.start()
    wait_for_job(job, timeout=90)
    assert job.status == "done", job.error
    assert job.attempts == 2
    assert len(entries_of_type(session, "compaction")) == 1
    check_compacted_context(session, job, before, ["AFTER RESTART"])
    # A late redelivery of the original message finds the job done and writes nothing:
    # the worker reports the task finished, with nothing done (None).
    sent = run_summary_job.delay(str(job.pk))
    finished = f"Task piweb.run_summary_job[{sent.id}] succeeded in "
    line = wait_until(lambda: _log_line(worker, finished), timeout=30)
    assert line and line.endswith(": None"), line
    assert len(entries_of_type(session, "compaction")) == 1
    job.refresh_from_db()
    assert job.status == "done" and job.attempts == 2


def _log_line(process, start: str) -> str | None:
    """The line of the process's log that contains `start` (None before it is written)."""
    for line in process.log.read_text(errors="replace").splitlines():
        if start in line:
            return line.rstrip()
    return None


def test_job_progress_reaches_the_websocket(worker, asgi_server, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=4, compaction=SMALL)
    cookie = session_cookie_for(owner)
    ws_url = asgi_server.url.replace("http", "ws") + f"/ws/sessions/{session.pi_id}/"
    llm.push(text(SUMMARY, delay_before=0.5))

    async def scenario():
        headers = {"Cookie": f"{cookie['name']}={cookie['value']}", "Origin": asgi_server.url}
        seen = []
        async with websockets.connect(ws_url, additional_headers=headers) as ws:
            await asyncio.wait_for(ws.recv(), 10)  # hello
            job = await asyncio.to_thread(jobs.request_compaction, session, actor=owner)
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if message["event"] == "job_progress":
                    assert message["data"]["job_id"] == str(job.pk)
                    seen.append(message["data"])
                    if message["data"]["status"] in ("done", "failed", "superseded"):
                        return seen

    seen = asyncio.run(scenario())
    statuses = [d["status"] for d in seen]
    assert statuses[0] == "queued" and "running" in statuses and statuses[-1] == "done"
    job = Job.objects.get(pk=seen[0]["job_id"])
    assert seen[-1]["result_entry"] == job.result_entry.pi_id
    assert seen[-1]["kind"] == "compaction"


@pytest.mark.embedded
def test_search_indexing_after_an_import_in_the_worker(worker, make_user, settings):
    """Once, the same again, and again after the worker that took it died."""
    owner = make_user()
    entries = [message("e0", None, text="hello"), message("e1", "e0", "assistant", "a narwhal")]
    report = import_jsonl_stream(
        as_file(jsonl_text(header(), entries)), owner, after_commit="worker"
    )
    session = report.session
    (job,) = Job.objects.filter(kind=Job.Kind.SEARCH_INDEX)
    assert job.params == {"work": [[session.pk, 0]], "tidy": True}
    wait_for_job(job, 30)
    assert job.status == "done" and job.progress["entries"] == 2, job.error

    def hits():
        return [h.entry_pi_id for h in search.search(owner, "narwhal").hits]

    assert hits() == ["e1"] and SearchDocument.objects.count() == 2
    again = wait_for_job(request_index([(session.pk, 0)], tidy=True), 30)
    assert again.status == "done" and SearchDocument.objects.count() == 2
    # A worker that took it and died: the sweep queues it again, a worker runs it.
    SearchDocument.objects.all().delete()
    silent = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS + 5)
    dead = Job.objects.create(
        kind=Job.Kind.SEARCH_INDEX,
        status=Job.Status.RUNNING,
        params={"work": [[session.pk, 0]], "tidy": True},
        attempts=1,
        started_at=silent,
        heartbeat_at=silent,
    )
    lifecycle.sweep(kinds=[Job.Kind.SEARCH_INDEX])  # (or a worker's sweeper did)
    wait_for_job(dead, 30)
    assert dead.status == "done" and dead.attempts == 2, dead.error
    assert hits() == ["e1"] and SearchDocument.objects.count() == 2
