"""selectors/jobs.py: the active jobs a job service looks for before it queues another, and
the runs that count against a user's limit."""

import pytest

from sessions_app.models import Job
from sessions_app.selectors import jobs
from sessions_app.services import sessions

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]

ACTIVE, DONE = Job.Status.QUEUED, Job.Status.DONE


def _job(session, kind, status=ACTIVE, **fields):
    return Job.objects.create(session=session, kind=kind, status=status, **fields)


def test_the_runs_that_count_against_a_user(make_user):
    alice, bob = make_user("alice"), make_user("bob")
    mine = sessions.create_session(owner=alice, cwd="/tmp")
    sent = _job(mine, Job.Kind.AGENT_RUN, Job.Status.RUNNING, created_by=alice)
    held = _job(mine, Job.Kind.AGENT_RUN, progress={"held": True})  # no sender: the owner's
    bobs = _job(mine, Job.Kind.AGENT_RUN, created_by=bob)  # bob sent it: his
    _job(mine, Job.Kind.AGENT_RUN, DONE, created_by=alice)
    _job(mine, Job.Kind.COMPACTION, created_by=alice)
    assert set(jobs.active_runs_of(alice.pk)) == {sent, held}
    assert jobs.sent_run_count(alice.pk) == 1  # the held one is not sent
    assert jobs.sent_run_count(bob.pk) == 1
    assert {job.pk for job in jobs.queued_runs()} == {held.pk, bobs.pk}


def test_the_active_jobs_a_new_request_would_repeat(make_user):
    session = sessions.create_session(owner=make_user(), cwd="/tmp")
    other = sessions.create_session(owner=session.owner, cwd="/tmp")
    assert jobs.active_compaction(session.pk) is None
    _job(session, Job.Kind.COMPACTION, DONE)
    compaction = _job(session, Job.Kind.COMPACTION)
    _job(other, Job.Kind.COMPACTION)
    assert jobs.active_compaction(session.pk) == compaction
    summary = _job(session, Job.Kind.BRANCH_SUMMARY, target_pi_id="t")
    _job(session, Job.Kind.BRANCH_SUMMARY, target_pi_id="u")
    assert jobs.active_branch_summaries(session, "t") == [summary]
    compare = _job(session, Job.Kind.COMPARE_SUMMARY, prepared_leaf_pi_id="a", target_pi_id="b")
    assert jobs.active_compare_summary(session, "a", "b") == compare
    assert jobs.active_compare_summary(session, "b", "a") is None
    assert set(jobs.active_job_pks([Job.Kind.COMPACTION])) == {
        compaction.pk,
        *Job.objects.filter(session=other).values_list("pk", flat=True),
    }
    assert jobs.active_job_pks([Job.Kind.COMPACTION], session.pk) == [compaction.pk]


def test_a_job_whose_sending_failed_is_still_unsent_until_it_runs(make_user):
    session = sessions.create_session(owner=make_user(), cwd="/tmp")
    job = _job(session, Job.Kind.COMPACTION, progress={"enqueue_failed": True})
    assert jobs.still_unsent(job.pk)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING)
    assert not jobs.still_unsent(job.pk)
