"""Reviewer mode in headless Chromium, driven by the keyboard only through a 10-item
queue: number keys score, s skips, k goes back to the previous item, j forward, e opens
the session; the progress bar follows. And two reviewers in two browser contexts taking
from one 50-item queue at once until it is empty: no item shown to both, none lost."""

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


def _shown_item(page) -> str:
    """The item reviewer mode shows ('' once the queue has nothing left for this reviewer)."""
    page.wait_for_selector("[data-review-mode]")
    return page.locator("[data-review-mode]").get_attribute("data-item") or ""


def test_two_reviewers_in_two_browsers_empty_a_50_item_queue_none_twice_none_lost(
    page_for, make_user
):
    owner, admin, first, second = (make_user() for _ in range(4))
    team = Team.objects.create(name="graders")
    TeamMembership.objects.create(team=team, user=admin, role="admin")
    for reviewer in (first, second):
        TeamMembership.objects.create(team=team, user=reviewer, role="reviewer")
    session = sessions.create_session(owner=owner, cwd="/work/fan", name="fan")
    root = sessions.append_entry(session, user("Which parser?"), actor=owner).pi_id
    for n in range(50):
        sessions.append_entry(session, assistant(f"answer {n}"), actor=owner, parent_pi_id=root)
    SessionShare.objects.create(session=session, team=team, role="viewer")
    scores.create_config(team, actor=admin, name="ok", kind="boolean")
    queue = review_queues.create_queue(
        team, actor=admin, name="answers", filters=ListFilters(), scope="branch_ends"
    )
    # two browser contexts: two cookie jars, two reviewers at once
    pages = {first.pk: page_for(first), second.pk: page_for(second)}
    for page in pages.values():
        page.goto(f"/queues/{queue.pk}/review/")
    shown_to = {pk: [] for pk in pages}
    working = dict(pages)
    for _round in range(60):  # 50 items between two: 25 rounds, and a margin
        if not working:
            break
        current = {pk: _shown_item(page) for pk, page in working.items()}
        for pk, item in list(current.items()):
            if not item:  # nothing left for this reviewer
                expect(working[pk].locator(".review-empty")).to_be_visible()
                del working[pk]
                continue
            shown_to[pk].append(int(item))
        if len(current) == 2 and all(current.values()):
            assert len(set(current.values())) == 2, f"one item shown to both: {current}"
        # both score "yes" (key 1) back to back: the two posts are in flight together
        for pk in working:
            working[pk].keyboard.press("1")
        for pk, page in working.items():
            expect(page.locator("[data-review-mode]")).not_to_have_attribute(
                "data-item", current[pk]
            )
    assert not working, "the queue never emptied"
    seen_first, seen_second = shown_to[first.pk], shown_to[second.pk]
    assert len(seen_first) == len(set(seen_first)) and len(seen_second) == len(set(seen_second))
    assert not set(seen_first) & set(seen_second)  # none handed out twice
    all_items = set(ReviewItem.objects.filter(queue=queue).values_list("pk", flat=True))
    assert set(seen_first) | set(seen_second) == all_items  # none lost
    assert seen_first and seen_second  # both took their share
    done = dict(ReviewItem.objects.filter(queue=queue).values_list("pk", "done_by"))
    assert all(done[pk] == first.pk for pk in seen_first)
    assert all(done[pk] == second.pk for pk in seen_second)
    assert Score.objects.filter(config__team=team).count() == 50
