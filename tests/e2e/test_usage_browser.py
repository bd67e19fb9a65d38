"""Usage in headless Chromium: the session header, the context chart (points, compaction
markers, a click selects the node), the sessions list's sorting and filters, and the
dashboard of a team of two. page_for fails any test that breaks the CSP."""

import pytest
from playwright.sync_api import expect

from sessions_app.models import SessionShare, Team, TeamMembership
from tests.support.browser import collect_errors
from tests.support.usage_data import import_costly

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SOURCE = "aaaaaaaa-0000-4000-8000-000000000001"
OTHER = "aaaaaaaa-0000-4000-8000-000000000002"


def test_session_header_and_context_chart(page_for, make_user):
    owner = make_user("chart-owner")
    import_costly(owner)
    page = page_for(owner)
    errors = collect_errors(page)
    page.goto(f"/s/{SOURCE}/")
    head = page.locator("#usage-head")
    expect(head.locator(".usage-cost")).to_have_text("$1.96")
    expect(head.locator(".usage-tokens")).to_have_text("12.1k tokens")
    assert head.locator(".usage-models .badge").all_inner_texts() == [
        "anthropic/claude-opus-4-5",
        "anthropic/claude-sonnet-4-5",
        "anthropic/claude-haiku-4-5",
        "openai/gpt-5.1-codex",
    ]
    head.locator("summary").click()
    row = head.locator('tr[data-key="anthropic/claude-opus-4-5"]')
    expect(row.locator(".tokens")).to_have_text("4600")
    expect(row.locator(".cost")).to_have_text("$1.50")

    page.click("#context-gauge")  # the chart opens from the header's context gauge
    chart = page.locator('[data-usage-chart="context"][data-ready]')
    expect(chart).to_have_count(1)
    assert chart.get_attribute("data-points") == "3"
    assert chart.get_attribute("data-compactions") == "1"
    series = page.evaluate(
        """() => {
          const u = document.querySelector('[data-usage-chart="context"]')._uplot;
          return {x: u.data[0], context: u.data[1], before: u.data[5]};
        }"""
    )
    # Turns at path positions 1, 6, 8 (context from usage), the compaction at 4 (4700
    # before), model changes at 5 and 8, the branch summary at 7.
    assert series["x"] == [1, 4, 5, 6, 7, 8]
    assert series["context"][0] == 1000 + 200 + 3000 + 500
    assert series["before"][1] == 4700
    assert page.locator(".context-table tr.compaction").count() == 1

    # Click the opus turn's point: the tree selects that node.
    x, y = page.evaluate(
        """() => {
          const el = document.querySelector('[data-usage-chart="context"]');
          const u = el._uplot, i = u.data[0].indexOf(6);
          const box = u.over.getBoundingClientRect();
          return [box.left + u.valToPos(u.data[0][i], 'x'), box.top + u.valToPos(u.data[1][i], 'y')];
        }"""
    )
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    expect(chart).to_have_attribute("data-selected", "e0000007")
    expect(page.locator("#tree-panel .tn.selected")).to_have_attribute("data-id", "e0000007")
    assert not errors, errors


def test_sessions_list_sorts_and_filters_in_the_url(page_for, make_user):
    owner = make_user("list-owner")
    import_costly(owner)
    import_costly(owner, session_id=OTHER, cwd="/work/other")
    from sessions_app.models import Session
    from sessions_app.services import sessions

    # Make the second one cheaper and on other models only: a usage entry in a new session.
    third = sessions.create_session(owner=owner, cwd="/work/third")
    sessions.append_entry(
        third,
        {
            "type": "usage",
            "provider": "google",
            "model": "gemini-2.5-pro",
            "timestamp": "2026-03-01T00:00:00.000Z",
            "usage": {
                "input": 5,
                "output": 5,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 10,
                "cost": {"total": 0.01},
            },
        },
    )
    assert Session.objects.count() == 3
    page = page_for(owner)
    errors = collect_errors(page)
    page.goto("/")
    rows = page.locator("#sessions-table tbody tr")
    expect(rows).to_have_count(3)
    # Started / last activity are the sessions' own times, not the import's.
    first_costly = page.locator(f'tr[data-session="{SOURCE}"]')
    expect(first_costly.locator(".started")).to_have_text("2026-01-10 09:59")
    expect(first_costly.locator(".last")).to_have_text("2026-01-11 09:00")
    # Sort by cost, highest first, then flip.
    page.locator("#sessions-table th a", has_text="Cost").click()
    page.wait_for_url("**sort=-cost**")
    costs = [
        float(v) for v in rows.locator(".cost").evaluate_all("els => els.map(e => e.dataset.value)")
    ]
    assert costs == sorted(costs, reverse=True) and costs[-1] == pytest.approx(0.01)
    page.locator("#sessions-table th a", has_text="Cost").click()
    page.wait_for_url("**sort=cost**")
    costs = [
        float(v) for v in rows.locator(".cost").evaluate_all("els => els.map(e => e.dataset.value)")
    ]
    assert costs[0] == pytest.approx(0.01)
    # Filter by project, keeping the sort, in the URL.
    page.click("#session-filter-box > summary")  # the filters are behind one button
    page.select_option("#session-filters select[name=project]", "/work/other")
    page.locator("#session-filters button[type=submit]").click()
    page.wait_for_url("**project=%2Fwork%2Fother**")
    assert "sort=cost" in page.url
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-session", OTHER)
    # Model filter and date range.
    page.goto("/?model=google%2Fgemini-2.5-pro")
    expect(rows).to_have_count(1)
    expect(page.locator("#session-filters select[name=model]")).to_have_value(
        "google/gemini-2.5-pro"
    )
    page.goto("/?from=2026-01-11&to=2026-01-11")
    expect(rows).to_have_count(2)
    page.goto("/?from=2026-02-01")
    expect(rows).to_have_count(1)
    assert not errors, errors


def test_dashboard_for_a_team_of_two(page_for, make_user):
    alice, bob = make_user("dash-alice"), make_user("dash-bob")
    team = Team.objects.create(name="platform")
    for user in (alice, bob):
        TeamMembership.objects.create(team=team, user=user)
    first = import_costly(alice)
    second = import_costly(bob, session_id=OTHER, cwd="/work/other")
    for session in (first, second):
        SessionShare.objects.create(session=session, team=team)
    page = page_for(bob)
    errors = collect_errors(page)
    page.goto("/usage/")
    page.select_option("#usage-filters select[name=team]", str(team.pk))
    page.locator("#usage-filters button[type=submit]").click()
    page.wait_for_url(f"**team={team.pk}**")
    expect(page.locator("h1")).to_contain_text("team platform")
    expect(page.locator("#usage-totals .usage-cost")).to_have_text("$3.92")
    people = page.locator("#usage-people tbody tr")
    expect(people).to_have_count(2)
    assert sorted(people.evaluate_all("els => els.map(e => e.dataset.person)")) == [
        "dash-alice",
        "dash-bob",
    ]
    expect(page.locator("#usage-top-sessions tbody tr")).to_have_count(2)
    expect(page.locator("#usage-projects tbody tr")).to_have_count(2)
    charts = page.locator('[data-usage-chart="daily"][data-ready]')
    expect(charts).to_have_count(2)
    assert charts.first.get_attribute("data-days") == "2"
    # Date range: only the second day.
    page.fill("#usage-filters input[name=from]", "2026-01-11")
    page.fill("#usage-filters input[name=to]", "2026-01-11")
    page.locator("#usage-filters button[type=submit]").click()
    page.wait_for_url("**from=2026-01-11**")
    expect(page.locator("#usage-totals .usage-cost")).to_have_text("$3.26")
    # The CSV link carries the same scope.
    href = page.locator("#usage-csv").get_attribute("href")
    assert f"team={team.pk}" in href and "from=2026-01-11" in href
    csv_text = page.request.get(href).text()
    assert csv_text.splitlines()[0].startswith("table,day,model")
    assert "total," in csv_text
    assert not errors, errors
