"""Exports in headless Chromium: download the HTML export and open it offline with the
network blocked."""

import pytest
from playwright.sync_api import expect

from tests.support.branchy_session import build_branchy_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_download_html_export_and_open_it_offline(page_for, make_user, browser, tmp_path):
    owner = make_user("owner")
    data = build_branchy_session(owner)
    page = page_for(owner)
    page.goto(f"/s/{data.session.pi_id}/?leaf={data.ids['a3']}&target={data.ids['a3']}")
    with page.expect_download() as info:
        page.click("#rv-panel a.rv-export[data-format=html]")
    target = tmp_path / "export.html"
    info.value.save_as(target)

    context = browser.new_context()
    requests = []
    context.on("request", lambda r: requests.append(r.url))

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            r.abort()

    context.route("**/*", route)
    offline = context.new_page()
    offline.goto(target.as_uri())
    expect(offline.locator(f"#e-{data.ids['a3']}")).to_contain_text("Fixed the parser")
    assert offline.locator(f"#e-{data.ids['b3']}").count() == 0
    expect(offline.locator(f".rv-node[data-entry-id='{data.ids['b3']}']")).to_be_visible()
    # collapsible tool output works (inline JS)
    offline.click("#rv-collapse")
    assert offline.evaluate("[...document.querySelectorAll('details')].every(d => !d.open)")
    offline.click("#rv-expand")
    assert offline.evaluate("[...document.querySelectorAll('details')].every(d => d.open)")
    offline.wait_for_timeout(300)
    assert requests == [target.as_uri()], requests
    context.close()
