"""Managing sessions in the app (issue 27), in headless Chromium: an unnamed session shows
its first user message (list, page, share and export pages) and a fork its own title;
rename writes a session_info entry as pi does; pin, tags and archive, each with its filter
in the sessions list; delete asks for confirmation and removes the session for the team
it is shared with."""

import pytest
from playwright.sync_api import expect

from sessions_app.models import Entry, Session, SessionShare, Team, TeamMembership
from sessions_app.services import fork, sharing
from tests.support.browser import collect_errors
from tests.support.tree_data import import_branched

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def list_names(page):
    return page.locator("#sessions-table tbody tr td:first-child a:first-child").all_inner_texts()


def test_unnamed_rename_pin_tag_archive_delete(page_for, make_user, workspace):
    owner = make_user("manager")
    mate = make_user("teammate")
    session = import_branched(owner, str(workspace))
    Session.objects.filter(pk=session.pk).update(name="")  # unnamed
    session.refresh_from_db()
    first = session.first_message
    assert first
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role="admin")
    TeamMembership.objects.create(team=team, user=mate)
    sharing.share_with_team(session, team.pk, "viewer", actor=owner)
    page = page_for(owner)
    errors = collect_errors(page)

    # Unnamed: its first user message, in the list, the page, share and export pages.
    page.goto("/")
    assert list_names(page)[0].startswith(first[:30])
    page.goto(f"/s/{session.pi_id}/")
    assert page.locator(".session-head h1").inner_text().startswith(first[:30])
    link = sharing.create_link(session, actor=owner, leaf_pi_id=None)
    page.goto(f"/l/{link.token}/")
    assert first[:30] in page.title() + page.inner_text("body")
    assert session.pi_id not in page.title()
    exported = page.request.get(f"/s/{session.pi_id}/export/html/").text()
    title = exported.split("<title>", 1)[1].split("</title>", 1)[0]
    assert first[:20] in title and session.pi_id not in title

    # A fork gets its own title, not its source's.
    Session.objects.filter(pk=session.pk).update(name="the source")
    forked = fork.fork_session(session, "e0000010", actor=owner)
    forked.refresh_from_db()
    assert forked.name == "" and str(forked) != "the source"
    Session.objects.filter(pk=session.pk).update(name="")

    # Rename from the page: a session_info entry at the leaf, as pi writes it.
    page.goto(f"/s/{session.pi_id}/")
    page.click("#session-more summary")
    page.fill("#rename-input", "flaky test hunt")
    page.click(".manage-rename button")
    expect(page.locator(".session-head h1")).to_have_text("flaky test hunt")
    info = Entry.objects.filter(session=session, type="session_info").order_by("-seq").first()
    assert info.payload["name"] == "flaky test hunt"
    session.refresh_from_db()
    assert session.leaf_id == info.pk

    # Pin and tag it; the list filters on both.
    page.click("#session-more summary")
    page.click("#pin-button")
    page.click("#session-more summary")
    page.fill("#tags-input", "#Bugs, ui")
    page.click(".manage-tags button")
    session.refresh_from_db()
    assert session.pinned and session.tags == "\nbugs\nui\n"
    page.goto("/")
    row = page.locator(f'tr[data-session="{session.pi_id}"]')
    expect(row.locator(".badge.pinned")).to_have_count(1)
    assert row.locator(".badge.tag").all_inner_texts() == ["#bugs", "#ui"]
    assert list_names(page)[0] == "flaky test hunt"  # pinned lead the list
    page.click("#session-filter-box > summary")  # the filters are behind one button
    page.check("#filter-pinned")
    page.click("#session-filters button[type=submit]")
    assert list_names(page) == ["flaky test hunt"]
    page.goto("/?tag=ui")
    assert list_names(page) == ["flaky test hunt"]
    page.goto("/?tag=nothing")
    assert list_names(page) == []

    # Archive: gone from the default list, there with "archived only".
    page.goto(f"/s/{session.pi_id}/")
    page.click("#session-more summary")
    page.click("#archive-button")
    expect(page.locator(".session-head .badge.archived")).to_have_count(1)
    page.goto("/")
    assert "flaky test hunt" not in list_names(page)
    page.click("#session-filter-box > summary")
    page.select_option("#filter-archived", "only")
    page.click("#session-filters button[type=submit]")
    assert list_names(page) == ["flaky test hunt"]

    # The teammate (a viewer) sees it and cannot manage it.
    other = page_for(mate)
    other.goto(f"/s/{session.pi_id}/")
    expect(other.locator("#session-manage")).to_have_count(0)

    # Delete: a dialog asks for the id; a wrong one changes nothing; then it is gone for
    # everyone it was shared with.
    page.goto(f"/s/{session.pi_id}/")
    page.click("#session-more summary")
    page.click("#delete-button")
    expect(page.locator("#delete-dialog")).to_be_visible()
    page.fill("#delete-confirm", "nope")
    page.click("#delete-confirm-button")
    expect(page.locator(".messages .error")).to_contain_text("Type the first 8")
    assert Session.objects.filter(pk=session.pk).exists()
    page.click("#session-more summary")
    page.click("#delete-button")
    page.fill("#delete-confirm", session.pi_id[:8])
    page.click("#delete-confirm-button")
    expect(page.locator(".messages")).to_contain_text("Deleted the session")
    assert not Session.objects.filter(pk=session.pk).exists()
    assert not SessionShare.objects.filter(team=team).exists()
    response = other.goto(f"/s/{session.pi_id}/")
    assert response.status == 404
    assert not errors, errors
