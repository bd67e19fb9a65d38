"""Alternatives in the browser (issue 36): "Try alternatives…" on a node, two variants
started from the page, their columns filling in live, and "Keep this one": the session
goes on in the kept branch's workspace, with its files."""

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from sessions_app.models import Job
from sessions_app.services import chat
from tests.support.agent_runs import messages, new_session, wait_run
from tests.support.scripted_llm import text, tool_call
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.worker]
BLOCKING = ("serious", "critical")  # axe-core's impacts that fail (as the every-page crawl)


def test_variants_from_the_page_compare_live_and_keep_one(
    worker, page_for, llm, make_user, workspace
):
    user = make_user()
    session = new_session(user, workspace)
    (workspace / "f.txt").write_text("base\n")
    chat.send_message(session, user, "!printf 'node\\n' > f.txt")
    assert wait_run(session).status == "done"
    session.refresh_from_db()
    node = session.leaf_pi_id
    llm.push_for(
        "make it red",
        tool_call("bash", {"command": "printf 'red\\n' > f.txt"}, call_id="r"),
        text("Red it is."),
    )
    llm.push_for("make it blue", text("Blue needs nothing."))

    page = page_for(user)
    page.goto(f"/s/{session.pi_id}/?target={node}")
    page.click("a.act-alternatives")
    expect(page.locator("h1")).to_have_text("Try alternatives")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    page.fill('textarea[name="message_1"]', "make it red")
    page.fill('textarea[name="message_2"]', "make it blue")
    page.fill('input[name="check"]', "grep -q red f.txt")
    page.click(".alt-start button[type=submit]")
    columns = page.locator(".alt-column")
    expect(columns).to_have_count(2, timeout=30000)
    # Live: both finish and their results show without a reload.
    expect(columns.nth(0).locator(".alt-answer")).to_contain_text("Red it is.", timeout=60000)
    expect(columns.nth(1).locator(".alt-answer")).to_contain_text(
        "Blue needs nothing.", timeout=60000
    )
    expect(columns.nth(0).locator(".alt-check")).to_contain_text("exit 0", timeout=60000)
    expect(columns.nth(1).locator(".alt-check")).to_contain_text("exit 1", timeout=60000)
    expect(columns.nth(0).locator(".alt-files")).to_contain_text("f.txt")
    expect(columns.nth(0).locator(".alt-check.differs")).to_have_count(1)  # differences marked
    expect(columns.nth(0).locator(".alt-check")).to_contain_text("passed")
    expect(columns.nth(1).locator(".alt-check")).to_contain_text("failed")
    # The finished comparison: axe-clean in both themes, no horizontal scroll on a phone.
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme, reduced_motion="reduce")
        page.wait_for_timeout(200)
        found = Axe().run(page).response["violations"]
        assert not [(v["id"], v["nodes"][0]["target"]) for v in found if v["impact"] in BLOCKING]
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 800})
    # The diffs against the node, on demand.
    columns.nth(0).locator(".alt-diffs summary").click()
    diff = columns.nth(0).locator(".alt-diff-body")
    expect(diff).to_contain_text("f.txt", timeout=30000)
    expect(diff).to_contain_text("red")
    expect(diff).to_contain_text("node")
    assert (workspace / "f.txt").read_text() == "node\n"

    # Keep the red one: the session page, at its branch; a command runs in its workspace.
    columns.nth(0).get_by_role("button", name="Keep this one").click()
    page.wait_for_url(re.compile(rf"/s/{session.pi_id}/(\?.*)?$"), timeout=30000)
    session.refresh_from_db()
    assert session.leaf.label == "kept"
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    page.fill("#chat-input", "!cat f.txt")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-transcript")).to_contain_text("cat f.txt", timeout=30000)
    assert wait_until(lambda: messages(session)[-1]["role"] == "bashExecution", 60)
    wait_run(session)
    last = messages(session)[-1]
    assert last["command"] == "cat f.txt" and last["output"].strip() == "red"
    assert Job.objects.filter(session=session, status__in=Job.ACTIVE).count() == 0
