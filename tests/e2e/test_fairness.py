"""One user holds every run slot they may; another user's `!echo` still answers at once.

Was (issue 23): one user with as many sessions as worker slots sent `!sleep 3600` in each,
and another user's `!echo` waited 43 s. Here the workers are started the way `runpiweb`
starts them, on queues of this test's own, with a per-user limit of 2 runs and 3 command
slots: the light layout of `make run` (piweb/queues.light_workers: runs on threads, the
other queues on threads of their own in one process) and the separate process pools of
`runworkers` (piweb/queues.worker_groups).
"""

import uuid

import pytest

from piweb import queues
from sessions_app.models import Job
from sessions_app.services import chat, jobs
from tests.support.agent_runs import new_session, send
from tests.support.job_sessions import SMALL, make_session
from tests.support.processes import ManagedProcess
from tests.support.scripted_llm import hang, text
from tests.support.waiting import wait_until
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

LIMIT = 2


@pytest.fixture(params=["light", "separate"])
def layout(request, child_env, tmp_path, settings, monkeypatch):
    """The runs and commands workers of runpiweb's layout, on a base queue of our own."""
    from piweb.celery import app

    base = f"q-fair-{uuid.uuid4().hex[:6]}"
    monkeypatch.setitem(app.conf, "task_default_queue", base)
    settings.PIWEB_USER_MAX_RUNS = LIMIT
    env = dict(
        child_env,
        PIWEB_CELERY_QUEUE=base,
        PIWEB_USER_MAX_RUNS=str(LIMIT),
        PIWEB_COMMAND_CONCURRENCY="3",
        PIWEB_SUMMARY_CONCURRENCY="2",
    )
    settings.PIWEB_COMMAND_CONCURRENCY = 3
    started = []
    if request.param == "light":
        workers = [
            (label, argv, {**env, **extra})
            for label, _names, argv, extra in queues.light_workers(base, 1, base)
        ]
    else:
        workers = [
            (label, queues.worker_argv(label, names, slots, base), env)
            for label, names, slots in queues.worker_groups(base, 1)
            if label in ("celery worker", "commands worker")
        ]
    for label, argv, worker_env in workers:
        argv = [("info" if arg == "warning" else arg) for arg in argv]
        proc = ManagedProcess(
            label.replace(" ", "-"),
            argv,
            worker_env,
            lambda p: "ready." in p.log.read_text(errors="replace"),
            tmp_path,
        )
        started.append(proc.start())
    yield base
    for proc in started:
        proc.stop()


def _status(job):
    job.refresh_from_db()
    return job.status


def test_one_users_held_slots_never_delay_anothers_echo(layout, make_user, tmp_path):
    hog, other = make_user(), make_user()
    hog_client = client_for(hog)
    sessions = []
    for i in range(LIMIT + 1):
        workspace = tmp_path / f"hog-{i}-{uuid.uuid4().hex[:6]}"
        workspace.mkdir()
        sessions.append(new_session(hog, workspace))
    notices = [send(hog_client, s, "!sleep 300").content.decode() for s in sessions]
    jobs = [Job.objects.get(session=s, kind="agent_run") for s in sessions]
    assert all("Sent." in n and "queued behind" not in n for n in notices[:LIMIT])
    assert "queued behind your other runs" in notices[LIMIT]  # what the user sees
    held = jobs[LIMIT]
    assert chat.is_held(held) and held.progress["note"] == "queued behind your other runs"
    assert wait_until(lambda: all(_status(j) == "running" for j in jobs[:LIMIT]), 60)
    assert _status(held) == "queued"

    # Another user's `!echo`, several times: each is done while the hog's runs still hold
    # their slots (how fast: bench/fairness_bench.py, target p95 < 2 s). Each echo done is
    # also the signal that the worker took the jobs queued after the held run: the held
    # run stayed held all that time (no pause needed to show it).
    workspace = tmp_path / f"other-{uuid.uuid4().hex[:6]}"
    workspace.mkdir()
    mine = new_session(other, workspace)
    for i in range(3):
        assert "Sent." in send(client_for(other), mine, f"!echo hello-{i}").content.decode()
        job = Job.objects.filter(session=mine, kind="agent_run").order_by("-created_at").first()
        assert wait_until(lambda job=job: _status(job) == "done", 30, interval=0.05)
        assert all(_status(j) == "running" for j in jobs[:LIMIT]) and _status(held) == "queued"

    # One of the hog's runs ends: their held run is sent and starts.
    chat.stop_run(sessions[0], hog)
    assert wait_until(lambda: _status(jobs[0]) == "cancelled", 30)
    assert wait_until(lambda: _status(held) == "running", 30)
    for session in sessions[1:]:
        chat.stop_run(session, hog)
    assert wait_until(lambda: all(_status(j) not in Job.ACTIVE for j in jobs), 30)


def test_a_held_run_is_never_failed_as_lost(layout, make_user, tmp_path, settings):
    """The sweep fails queued runs nobody picked up in time; a held run waits on purpose."""
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app.services.jobs import lifecycle

    hog = make_user()
    sessions = []
    for i in range(LIMIT + 1):
        workspace = tmp_path / f"hog-{i}-{uuid.uuid4().hex[:6]}"
        workspace.mkdir()
        sessions.append(new_session(hog, workspace))
        chat.send_message(sessions[-1], hog, "!sleep 300")
    jobs = [Job.objects.get(session=s, kind="agent_run") for s in sessions]
    held = jobs[LIMIT]
    long_ago = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS * 20)
    Job.objects.filter(pk=held.pk).update(created_at=long_ago)
    lifecycle.sweep()
    assert _status(held) == "queued" and chat.is_held(held)
    for session in sessions:
        chat.stop_run(session, hog)
    assert wait_until(lambda: all(_status(j) not in Job.ACTIVE for j in jobs), 30)


@pytest.mark.parametrize("layout", ["light"], indirect=True)
def test_summaries_keep_to_their_own_threads_in_the_light_layouts_queue_pool(
    layout, make_user, tmp_path, llm
):
    """Four compactions whose model hangs: two run (PIWEB_SUMMARY_CONCURRENCY), two wait in
    their line, and another user's `!echo` in the same worker process is done meanwhile."""
    owner, other = make_user(), make_user()
    llm.push(*[hang(8)] * 4, *[text("## Goal\nShip it.")] * 8)
    summaries = [
        jobs.request_compaction(make_session(owner, compaction=SMALL), actor=owner)
        for _ in range(4)
    ]

    def running():
        return Job.objects.filter(pk__in=[j.pk for j in summaries], status="running").count()

    assert wait_until(lambda: running() == 2, 60)
    workspace = tmp_path / f"echo-{uuid.uuid4().hex[:6]}"
    workspace.mkdir()
    mine = new_session(other, workspace)
    for i in range(2):
        assert "Sent." in send(client_for(other), mine, f"!echo line-{i}").content.decode()
        job = Job.objects.filter(session=mine, kind="agent_run").order_by("-created_at").first()
        assert wait_until(lambda job=job: _status(job) == "done", 6, interval=0.05)
    assert running() == 2, "the summaries hold their own two threads, no more"
    done = ("done", "failed", "superseded")
    assert wait_until(lambda: all(_status(j) in done for j in summaries), 120)
