"""The jobs panel in headless Chromium: every kind of job shows queued, running, done
and failed without a reload (websocket job_progress, with htmx polling as fallback)."""

import pytest
from playwright.sync_api import expect

from sessions_app.models import Job
from sessions_app.services import jobs
from tests.support.job_sessions import SMALL, add_turn, make_session, wait_for_job
from tests.support.scripted_llm import error, last_text, text

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.browser,
    pytest.mark.worker,
]


def off_loop(fn, *args, **kwargs):
    """Call a service from a plain thread, as a web request would: events.publish_now
    cannot run in this thread, where Playwright's event loop lives."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    def call():
        try:
            return fn(*args, **kwargs)
        finally:
            connection.close()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result()


def _row(job, status):
    return f'#jobs-list [data-job-id="{job.pk}"][data-job-status="{status}"]'


def _occupy_both_worker_slots(owner, llm, seconds):
    """Two slow jobs on other sessions, so the next job waits in the queue."""
    blockers = []
    for _ in range(2):
        other = make_session(owner, turns=3, compaction=SMALL)
        blockers.append(off_loop(jobs.request_compaction, other, actor=owner))
    for blocker in blockers:
        wait_for_job(blocker, 30, statuses=("running",))
    return blockers


def test_jobs_show_every_status_live(worker, page_for, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    answer1 = session.leaf.pi_id
    add_turn(session, 4)
    session.refresh_from_db()
    page = page_for(owner)
    page.goto(f"/s/{session.pi_id}/")
    page.click("#toggle-drawer")  # the jobs are in the details drawer, closed until opened
    page.wait_for_function("() => document.body.dataset.ws === 'open'")
    page.evaluate("window.__noReload = 'still here'")

    # Compaction: queued (both worker slots busy) -> running -> done.
    llm.push(text("BLOCK", delay_before=3), text("BLOCK", delay_before=3))
    llm.push(text("SUMMARY", delay_before=1.5))
    blockers = _occupy_both_worker_slots(owner, llm, 3)
    job = off_loop(jobs.request_compaction, session, actor=owner, focus="browser")
    page.wait_for_selector(_row(job, "queued"))
    page.wait_for_selector(_row(job, "running"))
    page.wait_for_selector(_row(job, "done"))
    wait_for_job(job)
    assert page.inner_text(f'[data-job-id="{job.pk}"] .job-result').startswith("→")
    for blocker in blockers:
        wait_for_job(blocker)

    # Branch summary: the same path.
    llm.push(text("BLOCK", delay_before=3), text("BLOCK", delay_before=3))
    llm.push(text("BRANCH", delay_before=1.5))
    blockers = _occupy_both_worker_slots(owner, llm, 3)
    session.refresh_from_db()
    summary = off_loop(
        jobs.request_branch_summary,
        session,
        old_leaf_pi_id=session.leaf.pi_id,
        target_pi_id=answer1,
        actor=owner,
    )
    page.wait_for_selector(_row(summary, "queued"))
    assert "Branch summary" in page.inner_text(f'[data-job-id="{summary.pk}"]')
    page.wait_for_selector(_row(summary, "running"))
    page.wait_for_selector(_row(summary, "done"))
    for blocker in blockers:
        wait_for_job(blocker)

    # Failures are visible with their reason, for both kinds.
    add_turn(session, 5)
    llm.push(error(400, "summary request rejected", type_="invalid_request_error"))
    failed = off_loop(jobs.request_compaction, session, actor=owner)
    page.wait_for_selector(_row(failed, "failed"))
    assert "summary request rejected" in page.inner_text(f'[data-job-id="{failed.pk}"]')
    session.refresh_from_db()
    llm.push(error(401, "bad key", type_="auth"))
    failed_summary = off_loop(
        jobs.request_branch_summary,
        session,
        old_leaf_pi_id=session.leaf.pi_id,
        target_pi_id=answer1,
        actor=owner,
    )
    page.wait_for_selector(_row(failed_summary, "failed"))
    assert "401" in page.inner_text(f'[data-job-id="{failed_summary.pk}"]')
    assert page.evaluate("window.__noReload") == "still here"


def test_compact_now_button_with_focus(worker, page_for, make_user, llm):
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    page = page_for(owner)
    page.goto(f"/s/{session.pi_id}/")
    page.click("#toggle-drawer")  # the jobs are in the details drawer, closed until opened
    page.wait_for_function("() => document.body.dataset.ws === 'open'")
    llm.push(text("FROM THE BUTTON", delay_before=1))
    page.fill("#jobs-focus", "the flaky test")
    page.click("#jobs-compact-button")
    page.wait_for_selector('#jobs-list .job[data-job-kind="compaction"]')
    page.wait_for_selector('#jobs-list .job[data-job-kind="compaction"][data-job-status="done"]')
    assert "Additional focus: the flaky test" in last_text(llm.requests[0])
    # Settings form (EDITOR rights): switch automatic compaction off.
    page.click(".jobs-settings-box summary")
    page.uncheck('#jobs-settings input[name="enabled"]')
    page.click('#jobs-settings button[type="submit"]')
    page.wait_for_selector("#jobs-settings .notice-ok")
    session.refresh_from_db()
    assert session.settings["compaction"]["enabled"] is False


def test_a_refused_compaction_shows_the_error_notice(page_for, make_user):
    """A 400 from "Compact now" is swapped in (htmx is configured to swap 4xx): the
    notice goes to the panel's notice box (HX-Retarget) and the job list stays."""
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    page = page_for(owner)
    page.goto(f"/s/{session.pi_id}/")
    page.click("#toggle-drawer")  # the jobs are in the details drawer, closed until opened
    page.wait_for_selector("#jobs-list")
    page.evaluate("document.getElementById('jobs-focus').removeAttribute('maxlength')")
    page.fill("#jobs-focus", "x" * 5000)
    with page.expect_response(lambda r: "/jobs/compact/" in r.url) as refused:
        page.click("#jobs-compact-button")
    assert refused.value.status == 400
    expect(page.locator("#jobs-notice .notice-error")).to_contain_text("limited to")
    expect(page.locator("#jobs .jobs-list")).to_have_count(1)
    assert not off_loop(lambda: Job.objects.filter(session=session).exists())
