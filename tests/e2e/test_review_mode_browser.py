"""Reviewer mode in headless Chromium, driven by the keyboard only through a 10-item
queue: number keys score, s skips, k goes back to the previous item, j forward, e opens
the session; the progress bar follows."""

import pytest
from playwright.sync_api import expect

from sessions_app.models import ReviewItem, Score, SessionShare, Team, TeamMembership
from sessions_app.selectors.sessions import ListFilters
from sessions_app.services import review_queues, scores, sessions
from tests.support.branchy_session import assistant, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_reviewer_mode_by_keyboard_through_ten_items(page_for, make_user):
    owner, admin, reviewer = make_user(), make_user(), make_user()
    team = Team.objects.create(name="graders")
    TeamMembership.objects.create(team=team, user=admin, role="admin")
    TeamMembership.objects.create(team=team, user=reviewer, role="reviewer")
    session = sessions.create_session(owner=owner, cwd="/work/fan", name="fan")
    root = sessions.append_entry(session, user("Which parser?"), actor=owner).pi_id
    for n in range(10):
        sessions.append_entry(session, assistant(f"answer {n}"), actor=owner, parent_pi_id=root)
    SessionShare.objects.create(session=session, team=team, role="viewer")
    scores.create_config(team, actor=admin, name="quality", kind="number", min_value=1, max_value=5)
    queue = review_queues.create_queue(
        team, actor=admin, name="answers", filters=ListFilters(), scope="branch_ends"
    )
    page = page_for(reviewer)
    page.goto(f"/queues/{queue.pk}/review/")
    count = page.locator(".review-count")
    answer = page.locator(".review-answer")
    expect(count).to_have_text("0 of 10 reviewed")
    expect(page.locator(".review-before")).not_to_have_attribute("open", "")  # collapsed

    skipped = answer.inner_text()
    page.keyboard.press("s")  # to the end of the queue
    expect(answer).not_to_have_text(skipped)
    for done in range(1, 11):
        shown = answer.inner_text()
        page.keyboard.press(str(done % 5 + 1))
        expect(count).to_have_text(f"{done} of 10 reviewed")
        if done == 2:  # back to the item just scored, and forward again
            page.keyboard.press("k")
            expect(answer).to_have_text(shown)
            expect(page.locator('.review-config[data-config="quality"] .score-badge')).to_have_text(
                "3"
            )
            page.keyboard.press("j")
            expect(answer).not_to_have_text(shown)
    expect(page.locator(".review-empty")).to_be_visible()
    expect(page.locator(".review-progress")).to_have_attribute("value", "10")
    assert ReviewItem.objects.filter(queue=queue, done_by=reviewer).count() == 10
    assert sorted(Score.objects.values_list("value", flat=True)) == sorted(
        float(n % 5 + 1) for n in range(1, 11)
    )
    assert skipped.strip() in [
        s.entry.payload["message"]["content"][0]["text"] for s in Score.objects.all()
    ]
    page.keyboard.press("k")  # the last item reviewed, then its session
    expect(answer).to_be_visible()
    page.keyboard.press("e")
    page.wait_for_url(f"**/s/{session.pi_id}/**")
    assert not page.csp_violations
