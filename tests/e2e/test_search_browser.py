"""Search in headless Chromium: search and land on the node."""

import pytest
from playwright.sync_api import expect

from tests.support.branchy_session import build_branchy_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_search_and_land_on_the_node(page_for, make_user):
    owner = make_user("owner")
    data = build_branchy_session(owner)
    build_branchy_session(make_user("someone-else"), name="Not yours")
    page = page_for(owner)
    page.goto("/search/")
    page.fill("input[name=q]", "zebrafish")
    page.select_option("select[name=role]", "toolResult")
    page.click("#rv-search-form button[type=submit]")
    hits = page.locator(".rv-results .rv-hit")
    expect(hits).to_have_count(1)
    expect(page.locator(".rv-results mark")).to_have_text("zebrafish")
    hits.first.click()
    q2 = data.ids["q2"]
    page.wait_for_url(f"**/s/{data.session.pi_id}/?leaf={q2}&target={q2}")
    expect(page.locator(f"#n-{q2}")).to_have_class(__import__("re").compile(r"\bselected\b"))
    expect(page.locator("#rv-selected-id")).to_have_text(q2)
