"""Branch compare: common ancestor, per-branch stats, and the summary job (real worker)."""

import time

import pytest

from sessions_app.models import Job
from sessions_app.selectors import compare
from sessions_app.selectors.compare import CompareError
from sessions_app.services.jobs import compare_summary, lifecycle
from tests.support.branchy_session import build_branchy_session
from tests.support.waiting import wait_until


@pytest.mark.django_db
@pytest.mark.embedded
def test_compare_two_branches(make_user):
    data = build_branchy_session(make_user())
    ids = data.ids
    result = compare.compare(data.session, ids["a3"], ids["b3"])
    assert result["ancestorId"] == ids["r1"]
    assert [e["id"] for e in result["a"]["segment"]] == [ids["a2"], ids["r2"], ids["a3"]]
    a, b = result["a"]["stats"], result["b"]["stats"]
    assert a["usage"]["totalTokens"] == 1900 and b["usage"]["totalTokens"] == 1100
    assert a["modifiedFiles"] == ["src/tokenizer.py"] and b["modifiedFiles"] == []
    assert a["errors"] == [] and [e["kind"] for e in b["errors"]] == ["bash failed"]
    assert "zebrafish" in b["errors"][0]["text"]
    assert a["lastAssistantText"] == "Fixed the parser. All tests pass."
    assert b["lastAssistantText"] == "The tests fail; giving up."
    # a node against its own ancestor: one side is empty
    same = compare.compare(data.session, ids["a1"], ids["a3"])
    assert same["ancestorId"] == ids["a1"] and same["a"]["segment"] == []
    with pytest.raises(CompareError):
        compare.compare(data.session, ids["a3"], "nope")


@pytest.mark.django_db
def test_compare_page(client, make_user):
    owner = make_user()
    data = build_branchy_session(owner)
    client.force_login(owner)
    page = client.get(
        f"/s/{data.session.pi_id}/compare/", {"a": data.ids["a3"], "b": data.ids["b3"]}
    )
    assert page.status_code == 200
    body = page.content.decode()
    assert f"<code>{data.ids['r1']}</code>" in body
    assert 'id="rv-side-a"' in body and 'id="rv-side-b"' in body
    assert "src/tokenizer.py" in body and "zebrafish" in body
    bad = client.get(f"/s/{data.session.pi_id}/compare/", {"a": "x", "b": "y"})
    assert bad.status_code == 400


@pytest.mark.django_db(transaction=True)
@pytest.mark.embedded
def test_summary_job_offline_and_with_model(worker, make_user, llm, client):
    owner = make_user()
    data = build_branchy_session(owner)
    job = compare_summary.request_compare_summary(
        data.session, data.ids["a3"], data.ids["b3"], actor=owner
    )
    again = compare_summary.request_compare_summary(
        data.session, data.ids["a3"], data.ids["b3"], actor=owner
    )
    assert again.pk == job.pk or Job.objects.get(pk=job.pk).status == "done"
    assert wait_until(lambda: Job.objects.get(pk=job.pk).status == "done", 60)
    job.refresh_from_db()
    assert job.kind == Job.Kind.COMPARE_SUMMARY and job.progress["offline"] is True
    assert "Offline comparison" in job.progress["summary"]
    assert "src/tokenizer.py" in job.progress["summary"]
    assert lifecycle.run_job(job.pk) is None  # idempotent: finished stays finished

    # with the scripted model
    from tests.support.scripted_llm import text

    data.session.model_profile = "scripted"
    data.session.save(update_fields=["model_profile"])
    llm.push(text("Branch A fixed the bug; branch B gave up after a failing test."))
    job2 = compare_summary.request_compare_summary(
        data.session, data.ids["a3"], data.ids["b3"], actor=owner
    )
    assert job2.pk != job.pk
    assert wait_until(lambda: Job.objects.get(pk=job2.pk).status in ("done", "failed"), 60)
    job2.refresh_from_db()
    assert job2.status == "done", job2.error
    assert job2.progress == {
        "phase": "done",
        "summary": "Branch A fixed the bug; branch B gave up after a failing test.",
        "offline": False,
    }
    sent = llm.requests[-1]
    assert "zebrafish" in str(sent) and "<branch-a>" in str(sent)
    client.force_login(owner)
    partial = client.get(f"/s/{data.session.pi_id}/compare/summary/{job2.pk}/")
    assert "branch B gave up" in partial.content.decode()


def _running_compare_job(data, **fields) -> Job:
    """A compare-summary job as a worker would have left it after claiming it."""
    from django.utils import timezone

    now = timezone.now()
    values = {
        "status": Job.Status.RUNNING,
        "attempts": 1,
        "started_at": now,
        "heartbeat_at": now,
        "progress": {"phase": "running"},
        **fields,
    }
    return Job.objects.create(
        session=data.session,
        kind=Job.Kind.COMPARE_SUMMARY,
        prepared_leaf_pi_id=data.ids["a3"],
        target_pi_id=data.ids["b3"],
        params={"a": data.ids["a3"], "b": data.ids["b3"]},
        **values,
    )


@pytest.mark.django_db(transaction=True)
def test_a_slow_model_call_keeps_its_job_alive(make_user, llm, settings):
    """The job heartbeats while the model thinks, so no sweep or redelivery takes it over
    once PIWEB_JOB_STALE_SECONDS have passed."""
    import threading

    from tests.support.scripted_llm import hang, text

    settings.PIWEB_JOB_STALE_SECONDS = 2
    settings.PIWEB_JOB_HEARTBEAT_SECONDS = 0.3
    data = build_branchy_session(make_user())
    data.session.model_profile = "scripted"
    data.session.save(update_fields=["model_profile"])
    job = _running_compare_job(data, status=Job.Status.QUEUED, attempts=0, heartbeat_at=None)
    llm.push(hang(4), text("A got further than B."))
    results = []
    runner = threading.Thread(target=lambda: results.append(lifecycle.run_job(job.pk)))
    runner.start()
    time.sleep(3)  # past the stale limit, still inside the model call
    assert Job.objects.get(pk=job.pk).status == Job.Status.RUNNING
    assert lifecycle.sweep(session=data.session) == []
    assert lifecycle.claim(job.pk) is None  # a redelivered task would leave it alone
    runner.join(30)
    job.refresh_from_db()
    assert results == [Job.Status.DONE] and job.attempts == 1
    assert job.progress["summary"] == "A got further than B."


@pytest.mark.django_db(transaction=True)
def test_a_compare_job_whose_worker_died_is_run_again_or_given_up(
    worker, make_user, client, settings
):
    from datetime import timedelta

    from django.utils import timezone

    data = build_branchy_session(make_user())
    silent_since = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS + 60)
    orphan = _running_compare_job(data, heartbeat_at=silent_since)
    # The sweep (the worker's sweeper thread calls it) queues the job again and a live
    # worker runs it; polling the job's page only reads.
    client.force_login(data.session.owner)
    client.get(f"/s/{data.session.pi_id}/compare/summary/{orphan.pk}/")
    assert Job.objects.get(pk=orphan.pk).status == Job.Status.RUNNING
    assert lifecycle.sweep(session=data.session) == [str(orphan.pk)]
    assert wait_until(lambda: Job.objects.get(pk=orphan.pk).status == Job.Status.DONE, 60)
    orphan.refresh_from_db()
    assert orphan.attempts == 2 and "Offline comparison" in orphan.progress["summary"]
    # Out of attempts: it fails with a reason instead of spinning for ever.
    exhausted = _running_compare_job(
        data, attempts=settings.PIWEB_JOB_MAX_ATTEMPTS, heartbeat_at=silent_since
    )
    assert lifecycle.sweep(session=data.session) == [str(exhausted.pk)]
    partial = client.get(f"/s/{data.session.pi_id}/compare/summary/{exhausted.pk}/")
    exhausted.refresh_from_db()
    assert exhausted.status == Job.Status.FAILED and "Gave up after" in exhausted.error
    assert "Gave up after" in partial.content.decode()
