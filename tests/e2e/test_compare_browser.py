"""Compare in headless Chromium: compare two branches (summary by the real worker)."""

import pytest
from playwright.sync_api import expect

from tests.support.branchy_session import build_branchy_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.worker
def test_compare_two_branches(page_for, make_user, worker):
    owner = make_user("owner")
    data = build_branchy_session(owner)
    ids = data.ids
    page = page_for(owner)
    page.goto(f"/s/{data.session.pi_id}/compare/")
    page.fill("input[name=a]", ids["a3"])
    page.fill("input[name=b]", ids["b3"])
    page.click("#rv-compare-form button")
    expect(page.locator("#rv-ancestor")).to_contain_text(ids["r1"])
    expect(page.locator("#rv-side-a .rv-modified")).to_contain_text("src/tokenizer.py")
    expect(page.locator("#rv-side-a .rv-tokens")).to_contain_text("1900")
    expect(page.locator("#rv-side-b .rv-errors")).to_contain_text("zebrafish")
    expect(page.locator("#rv-side-b .rv-outcome")).to_contain_text("giving up")
    page.click("#rv-summarize")
    expect(page.locator(".rv-summary-text")).to_contain_text("Offline comparison", timeout=60000)
    expect(page.locator("#rv-compare-job")).to_contain_text("offline summary")
