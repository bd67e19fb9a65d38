"""Teams in the app without the admin site (issue 27), in headless Chromium: any user
creates a team, adds members by username with a role (viewer, editor, admin), changes
roles, and members leave; a viewer member reads what is shared with the team even where
the share says editor."""

import pytest
from playwright.sync_api import expect

from sessions_app.models import Team, TeamMembership
from sessions_app.selectors.access import role_for
from sessions_app.services import sharing
from tests.support.browser import collect_errors
from tests.support.tree_data import import_branched

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_create_invite_roles_and_leave(page_for, make_user, workspace):
    alice = make_user("alice")
    bob = make_user("bob")
    make_user("carol")
    session = import_branched(alice, str(workspace))
    page = page_for(alice)
    errors = collect_errors(page)

    # Alice (no staff rights) creates a team from the Teams page: she is its admin.
    page.goto("/")
    page.click(".nav-teams")
    page.fill("#team-name", "crew")
    page.click("#team-create button")
    team_box = page.locator('section[data-team="crew"]')
    expect(team_box.locator("h2 .badge")).to_have_text("admin")
    team = Team.objects.get(name="crew")
    assert TeamMembership.objects.get(team=team, user=alice).role == "admin"
    # A second team by the same name is refused.
    page.fill("#team-name", "Crew")
    page.click("#team-create button")
    expect(page.locator(".messages .error")).to_contain_text("already a team")

    # Invite by username: an unknown name is refused; bob joins as viewer.
    invite = team_box.locator(".team-invite")
    invite.locator("input[name=username]").fill("nobody-here")
    invite.locator("button").click()
    expect(page.locator(".messages .error")).to_contain_text("No user called")
    invite = page.locator('section[data-team="crew"] .team-invite')
    invite.locator("input[name=username]").fill("bob")
    invite.locator("select[name=role]").select_option("viewer")
    invite.locator("button").click()
    expect(page.locator('tr[data-member="bob"]')).to_have_count(1)

    # Shared with the team as editor: bob, a viewer member, can read but not chat.
    sharing.share_with_team(session, team.pk, "editor", actor=alice)
    assert role_for(bob, session) == "viewer"
    other = page_for(bob)
    other.goto(f"/s/{session.pi_id}/")
    expect(other.locator("#chat-form")).to_have_count(0)
    other.goto("/teams/")
    expect(other.locator('section[data-team="crew"] h2 .badge')).to_have_text("viewer")
    expect(other.locator('section[data-team="crew"] .team-invite')).to_have_count(0)

    # Alice makes bob an editor: he can chat now.
    row = page.locator('tr[data-member="bob"]')
    row.locator("select[name=role]").select_option("editor")
    row.locator("button", has_text="Set").click()
    expect(page.locator(".messages")).to_contain_text("Changed a role")
    assert role_for(bob, session) == "editor"
    other.goto(f"/s/{session.pi_id}/")
    expect(other.locator("#chat-form")).to_have_count(1)

    # Alice, the last admin, cannot leave while bob is in it.
    page.locator('section[data-team="crew"] .team-leave button').click()
    expect(page.locator(".messages .error")).to_contain_text("last admin")
    # Bob leaves: the session is no longer his to see.
    other.goto("/teams/")
    other.locator('section[data-team="crew"] .team-leave button').click()
    expect(other.locator(".messages")).to_contain_text("You left crew")
    expect(other.locator('section[data-team="crew"]')).to_have_count(0)
    assert other.goto(f"/s/{session.pi_id}/").status == 404
    assert not errors, errors
