"""The one job lifecycle (services/jobs/lifecycle.py): the registry and enqueueing by task
name, the attempt number as claim token, and the sweep's policy per kind. Real
PostgreSQL/SQLite and the real broker; no worker consumes the queues used here."""

import ast
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from piweb.celery import app
from sessions_app.models import Job
from sessions_app.services import sessions
from sessions_app.services.jobs import agent_run, compaction, lifecycle
from tests.support.job_sessions import SMALL, make_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

Status = Job.Status


@pytest.fixture
def queue(settings, monkeypatch, redis_ready):
    """A fresh queue that no worker consumes, for every task this test sends."""
    name = f"q-lifecycle-{uuid.uuid4().hex[:8]}"
    settings.PIWEB_JOBS_QUEUE = name
    monkeypatch.setitem(app.conf, "task_default_queue", name)
    return name


def _sent(queue: str, timeout: float = 5.0) -> list[tuple[str, list]]:
    """The task messages waiting in `queue` (task name, args), consumed."""
    found = []
    with app.connection_for_read() as conn:
        inbox = conn.SimpleQueue(queue)
        try:
            while True:
                message = inbox.get(timeout=timeout if not found else 0.5)
                found.append((message.headers["task"], list(message.payload[0])))
                message.ack()
        except inbox.Empty:
            pass
        finally:
            inbox.close()
    return found


def _stale_beat(settings):
    return timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS + 5)


# --- registry and enqueue -----------------------------------------------------------------


def test_every_kind_is_registered_with_a_task_the_worker_knows():
    import sessions_app.tasks  # noqa: F401  (the worker imports it; we check the names)

    kinds = lifecycle.registered_kinds()
    assert set(kinds) == set(Job.Kind.values)
    for spec in kinds.values():
        assert spec.task in app.tasks, spec
        assert spec.on_stale in (lifecycle.REQUEUE, lifecycle.FAIL)


def test_create_enqueues_the_kinds_task_by_name_after_commit(make_user, queue):
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    job = compaction.request_compaction(session, actor=owner)
    sent = _sent(queue)
    assert len(sent) == 1
    task, args = sent[0]
    assert task == "piweb.run_job" and args == [str(job.pk)]
    assert job.status == Status.QUEUED and job.progress == {"phase": "queued"}


def test_enqueue_with_the_broker_down_flags_the_job_and_the_sweep_sends_it(
    make_user, queue, monkeypatch
):
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    with monkeypatch.context() as broken:
        broken.setitem(app.conf, "broker_url", "redis://127.0.0.1:9/0")
        broken.setitem(app.conf, "task_publish_retry", False)
        broken.setattr(app, "_pool", None)
        broken.setattr(app.amqp, "_producer_pool", None)
        job = compaction.request_compaction(session, actor=owner)
        job.refresh_from_db()
        assert job.status == Status.QUEUED and job.progress.get("enqueue_failed") is True
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    assert lifecycle.sweep(session=session) == [str(job.pk)]
    job.refresh_from_db()
    assert job.status == Status.QUEUED and "enqueue_failed" not in job.progress
    assert [task for task, _ in _sent(queue)] == ["piweb.run_job"]


def test_services_never_import_the_tasks_module():
    root = Path(__file__).resolve().parents[2] / "sessions_app" / "services"
    offenders = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            if any(n == "sessions_app.tasks" for n in names):
                offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert offenders == []


def test_the_tasks_module_runs_jobs_and_keeps_old_names_only_for_upgrades():
    """One task runs every kind with a `run`; besides it, the agent run's own task, the
    health probe, and names a message left in the queue at an upgrade may still carry."""
    import sessions_app.tasks  # noqa: F401

    ours = {name for name in app.tasks if name.startswith("piweb.")}
    assert ours == {
        "piweb.run_job",
        "piweb.agent_run",
        "piweb.ping",
        *("piweb.run_summary_job", "piweb.compare_summary"),  # summaries, before run_job
        *("piweb.finish_import", "piweb.finish_imports", "piweb.measure_workspace"),
    }
    runners = {spec.task for spec in lifecycle.registered_kinds().values()}
    assert runners == {"piweb.run_job", "piweb.agent_run"}


def test_messages_left_under_the_old_names_become_their_jobs(make_user, queue):
    from sessions_app import tasks

    owner = make_user()
    session = make_session(owner, turns=1, compaction=SMALL)
    tasks.finish_imports.apply(args=[[[session.pk, 0]]])
    tasks.finish_import.apply(args=[session.pk, 2])
    tasks.measure_workspace.apply(args=[owner.pk])
    index = list(Job.objects.filter(kind=Job.Kind.SEARCH_INDEX).order_by("created_at"))
    assert [job.params for job in index] == [
        {"work": [[session.pk, 0]], "tidy": True},
        {"work": [[session.pk, 2]], "tidy": True},
    ]
    measure = Job.objects.get(kind=Job.Kind.WORKSPACE_MEASURE)
    assert measure.created_by == owner and measure.status == Status.QUEUED
    sent = _sent(queue)
    assert sent == [("piweb.run_job", [str(job.pk)]) for job in [*index, measure]]


# --- claim token -------------------------------------------------------------------------


def test_a_stale_attempt_can_neither_beat_nor_report_nor_finish(make_user, queue, settings):
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    job = compaction.request_compaction(session, actor=owner)
    first, attempt1 = lifecycle.claim(job.pk)
    assert attempt1 == 1 and first.status == Status.RUNNING
    assert lifecycle.claim(job.pk) is None  # alive: a redelivered task leaves it alone
    # Its worker goes silent; another worker takes it over with the next attempt.
    Job.objects.filter(pk=job.pk).update(heartbeat_at=_stale_beat(settings), params={})
    second, attempt2 = lifecycle.claim(job.pk)
    assert attempt2 == 2
    # The first worker wakes up: everything it tries with its old token is refused.
    assert lifecycle.beat(job.pk, attempt1) is False
    lifecycle.set_progress(first, attempt1, phase="summarizing", step=9)
    assert lifecycle.finish_own(first, attempt1, Status.DONE, phase="done") is None
    assert lifecycle.fail_own(first, attempt1, "late") is None
    job.refresh_from_db()
    assert job.status == Status.RUNNING and job.attempts == 2 and "step" not in job.progress
    # The current attempt can.
    assert lifecycle.beat(job.pk, attempt2) is True
    assert lifecycle.finish_own(second, attempt2, Status.DONE, phase="done") == Status.DONE
    job.refresh_from_db()
    assert job.status == Status.DONE and job.finished_at is not None


def test_claim_gives_up_after_the_attempt_limit(make_user, queue, settings):
    settings.PIWEB_JOB_MAX_ATTEMPTS = 2
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    job = compaction.request_compaction(session, actor=owner)
    Job.objects.filter(pk=job.pk).update(
        status=Status.RUNNING, attempts=2, heartbeat_at=_stale_beat(settings)
    )
    assert lifecycle.claim(job.pk) is None
    job.refresh_from_db()
    assert job.status == Status.FAILED and "Gave up after 2 attempts" in job.error


# --- sweep policy per kind -----------------------------------------------------------------


def _job(session, kind, **fields):
    return Job.objects.create(session=session, kind=kind, **fields)


def test_the_sweep_requeues_summaries_and_fails_agent_runs(make_user, queue, settings):
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    other = sessions.create_session(owner=owner, cwd=session.cwd)
    beat = _stale_beat(settings)
    lost = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS * 10 + 5)
    dead = {"status": Status.RUNNING, "attempts": 1, "heartbeat_at": beat}
    summary = _job(session, Job.Kind.COMPACTION, **dead)
    compare = _job(session, Job.Kind.COMPARE_SUMMARY, params={"a": "x", "b": "y"}, **dead)
    run = _job(session, Job.Kind.AGENT_RUN, **dead)
    never_picked = _job(other, Job.Kind.AGENT_RUN)
    Job.objects.filter(pk=never_picked.pk).update(created_at=lost)
    fresh = _job(other, Job.Kind.BRANCH_SUMMARY)  # queued just now: left alone

    swept = lifecycle.sweep()
    assert sorted(swept) == sorted(str(j.pk) for j in (summary, compare, run, never_picked))
    for job in (summary, compare, run, never_picked, fresh):
        job.refresh_from_db()
    # requeue: queued again, sent again
    assert summary.status == compare.status == Status.QUEUED
    assert summary.progress["phase"] == compare.progress["phase"] == "requeued"
    assert [task for task, _ in _sent(queue)] == ["piweb.run_job", "piweb.run_job"]
    # fail: an agent run never runs twice
    assert run.status == Status.FAILED and run.error == agent_run.KIND.stale_error
    assert never_picked.status == Status.FAILED
    assert never_picked.error == agent_run.KIND.lost_error
    assert fresh.status == Status.QUEUED
    # A run that the sweep failed is also refused by a redelivered task.
    assert lifecycle.claim(run.pk) is None


def test_a_kind_registered_with_the_fail_policy_is_failed_on_redelivery(make_user, queue):
    """A new kind is one register() call; its policy is honoured by claim and sweep."""
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    spec = lifecycle.JobKind(
        kind=Job.Kind.COMPARE_SUMMARY,
        on_stale=lifecycle.FAIL,
        stale_error="gone for good",
    )
    original = lifecycle.kind_of(Job.Kind.COMPARE_SUMMARY)
    lifecycle.register(spec)
    try:
        job = _job(session, Job.Kind.COMPARE_SUMMARY, status=Status.RUNNING, attempts=1)
        assert lifecycle.claim(job.pk) is None  # no heartbeat ever: its worker is gone
        job.refresh_from_db()
        assert job.status == Status.FAILED and job.error == "gone for good"
    finally:
        lifecycle.register(original)
