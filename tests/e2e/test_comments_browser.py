"""Comments in headless Chromium: comment, reply and resolve on a node of the session page;
the tree's marker, the activity list and the list of open comments follow."""

import pytest
from playwright.sync_api import expect

from sessions_app.models import Comment, SessionShare, Team, TeamMembership
from tests.support.branchy_session import build_branchy_session
from tests.support.waiting import wait_db

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_comment_and_resolve(page_for, make_user):
    owner, reviewer = make_user("owner"), make_user("reviewer")
    data = build_branchy_session(owner)
    team = Team.objects.create(name="review")
    TeamMembership.objects.create(team=team, user=reviewer)
    SessionShare.objects.create(session=data.session, team=team, role="viewer")
    q2 = data.ids["q2"]
    page = page_for(reviewer)
    page.goto(f"/s/{data.session.pi_id}/?leaf={q2}&target={q2}")
    form = page.locator("#review-comments .rv-comment-form")
    form.locator("textarea").fill("Why does test_zebrafish fail here?")
    form.locator("button").click()
    expect(page.locator("#review-comments .rv-thread")).to_contain_text("Why does test_zebrafish")
    comment = wait_db(lambda: Comment.objects.filter(entry__pi_id=q2).first())
    assert comment.author == reviewer
    # the tree node shows the marker (after the tree re-renders: reload)
    page.reload()
    expect(page.locator(f"#n-{q2} .rv-marker")).to_have_text("💬1")
    # reply, then resolve
    page.locator("#review-comments .rv-reply-form input[name=body]").fill("Missing fixture.")
    page.locator("#review-comments .rv-reply-form button").click()
    expect(page.locator("#review-comments .rv-reply")).to_contain_text("Missing fixture.")
    page.locator("#review-comments .rv-resolve").click()
    expect(page.locator("#review-comments .rv-thread.rv-resolved")).to_be_visible()
    expect(page.locator("#review-comments .rv-reopen")).to_be_visible()
    wait_db(lambda: Comment.objects.get(pk=comment.pk).resolved)
    # the activity list recorded it
    expect(page.locator("#review-activity")).to_contain_text("resolved comment")
    # clicking another node moves the comment box to it
    page.click(f"#n-{data.ids['a3']}")
    expect(page.locator("#rv-selected-id")).to_have_text(data.ids["a3"])
    expect(page.locator("#review-comments")).to_contain_text("No comments on this entry")
    page.goto(f"/s/{data.session.pi_id}/review/")
    expect(page.locator(".rv-review-list")).to_contain_text("No open comments")
