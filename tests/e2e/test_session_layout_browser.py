"""The chat-first session page in headless Chromium (issue 27): the conversation is the
main column, the tree a collapsible left panel, the node and the inspector open in a
drawer; the header (entries, tokens, cost, context gauge) follows the session live over
the websocket; at phone width the tree and the drawer are overlays; no failed request
(the favicon) and no console error."""

import pytest
from playwright.sync_api import expect

from sessions_app.services import sessions
from tests.support.agent_runs import new_session, wait_run
from tests.support.browser import collect_errors
from tests.support.scripted_llm import text
from tests.support.tree_data import import_branched

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def watch(page):
    """Script errors, console errors and every failed request."""
    errors = collect_errors(page)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on(
        "console",
        lambda m: (
            errors.append(m.text) if m.type == "error" and "Failed to load" in m.text else None
        ),
    )
    return errors


def box(page, selector):
    return page.locator(selector).bounding_box()


# The elements that reach past the window's right edge (the message of a failed check).
WIDEST = """() => Array.from(document.querySelectorAll("body *"))
  .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1)
  .slice(0, 8).map((el) => el.tagName + "." + el.className + " " + Math.round(el.getBoundingClientRect().right))"""


def no_sideways_scroll(page):
    return page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_layout_at_1280_tree_chat_drawer_and_gauge(page_for, make_user, workspace):
    owner = make_user("layout-owner")
    session = import_branched(owner, str(workspace))
    page = page_for(owner)
    errors = watch(page)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    page.click("#toggle-drawer")  # the drawer starts closed: open it
    # The tree left, the conversation in the middle (the widest), the drawer right.
    tree, chat, drawer = box(page, "#tree-panel"), box(page, "#chat-panel"), box(page, "#drawer")
    assert tree["x"] < chat["x"] < drawer["x"]
    assert chat["width"] > tree["width"] and chat["width"] > drawer["width"] - 10
    assert chat["height"] > 500  # no chart eating the height
    assert no_sideways_scroll(page)
    # A tool call reads as what it did, without a click; its id only inside.
    call = page.locator("#chat-transcript details.tool-call", has_text="$ make test")
    expect(call.locator("summary")).to_be_visible()
    expect(call.locator(".tool-call-meta")).to_be_hidden()
    expect(page.locator("#chat-transcript .tool-call-head", has_text="call_b1")).to_have_count(0)
    # The conversation shows the active branch, tool results folded.
    expect(page.locator("#chat-transcript .chat-msg").first).to_be_visible()
    folded = page.locator("#chat-transcript details.tool-result:not([open])")
    assert folded.count() >= 1
    # The gauge: context used against the window; a click opens the chart over the page.
    gauge = page.locator("#context-gauge")
    expect(gauge).to_be_visible()
    assert int(gauge.get_attribute("data-window")) > 0
    assert int(gauge.get_attribute("data-used")) > 0
    expect(page.locator("#context-chart-panel")).to_be_hidden()
    gauge.click()
    expect(page.locator('[data-usage-chart="context"][data-ready]')).to_have_count(1)
    expect(gauge).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("Escape")
    expect(page.locator("#context-chart-panel")).to_be_hidden()
    # Collapse the tree: the chat takes its room; Alt+T brings it back.
    page.click("#toggle-tree")
    expect(page.locator("#tree-panel")).to_be_hidden()
    assert box(page, "#chat-panel")["width"] > chat["width"] + 200
    page.keyboard.press("Alt+t")
    expect(page.locator("#tree-panel")).to_be_visible()
    # Close the drawer; clicking a node opens it again with the node; the inspector too.
    page.click("#toggle-drawer")
    expect(page.locator("#drawer")).to_be_hidden()
    page.click("#n-e0000014 .preview")
    expect(page.locator('#entry-pane [data-entry="e0000014"]')).to_be_visible()
    expect(page.locator("#drawer")).to_be_visible()
    page.locator("#entry-pane button", has_text="Inspect context here").click()
    expect(page.locator("#inspector-pane .inspector")).to_be_visible()
    assert page.locator("#inspector-pane").bounding_box()["x"] >= drawer["x"] - 1
    assert not errors, errors


@pytest.mark.worker
def test_the_conversation_is_the_page_at_1280(page_for, make_user, workspace):
    """At 1280x800 the chat (messages and composer) is at least 60% of the width with the
    tree at its default width and the drawer closed; the composer sits at the bottom; the
    header is one line whose ⋯ menu holds the session's actions; the tree's edge resizes
    it and the width is remembered."""
    owner = make_user("chat-first")
    session = import_branched(owner, str(workspace))
    page = page_for(owner)
    errors = watch(page)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    expect(page.locator("#drawer")).to_be_hidden()
    expect(page.locator("#toggle-drawer")).to_have_attribute("aria-pressed", "false")
    tree, chat = box(page, "#tree-panel"), box(page, "#chat-panel")
    assert 300 <= tree["width"] <= 340
    assert chat["width"] >= 0.6 * 1280, chat
    composer = box(page, "#chat-input")
    assert composer["y"] + composer["height"] > 800 - 100  # pinned at the bottom
    expect(page.locator("#chat-transcript .chat-msg").last).to_be_in_viewport()
    head = box(page, ".session-head")
    assert head["height"] <= 56
    title = box(page, ".session-head h1")
    page.wait_for_load_state("networkidle")  # the live figures' first refresh has landed
    for part in ("#context-gauge", ".usage-cost", "#session-more > summary"):
        expect(page.locator(part)).to_be_visible()
        b = box(page, part)
        assert abs((b["y"] + b["height"] / 2) - (title["y"] + title["height"] / 2)) < 8, part
    # The ⋯ menu: resume in pi, download, share, export, rename, archive, delete.
    page.click("#session-more > summary")
    menu = page.locator("#session-more .menu-panel")
    expect(menu.locator(".resume-command")).to_be_visible()
    for words in ("Download for pi", "Share…", "as HTML", "as Markdown"):
        expect(menu.get_by_role("link", name=words)).to_be_visible()
    for button in ("#rename-input", "#archive-button", "#delete-button", "#pin-button"):
        expect(menu.locator(button)).to_be_visible()
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    # The tree's edge: drag it 120 px wider; the width survives a reload.
    edge = box(page, "#tree-resizer")
    page.mouse.move(edge["x"] + 3, edge["y"] + 200)
    page.mouse.down()
    page.mouse.move(edge["x"] + 123, edge["y"] + 200, steps=5)
    page.mouse.up()
    wider = box(page, "#tree-panel")["width"]
    assert abs(wider - (tree["width"] + 120)) <= 4, (wider, tree["width"])
    page.reload()
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    assert abs(box(page, "#tree-panel")["width"] - wider) <= 1
    # the leaf selected by default is not a node asked for: the reload keeps the drawer closed
    expect(page.locator("#drawer")).to_be_hidden()
    assert "target=" not in page.url, page.url
    page.focus("#tree-resizer")
    page.keyboard.press("ArrowLeft")
    assert abs(box(page, "#tree-panel")["width"] - (wider - 16)) <= 1
    # Escape closes the drawer an action opened.
    page.click("#n-e0000014 .preview")
    expect(page.locator("#drawer")).to_be_visible()
    # the node's details have arrived (their swap would open the drawer again)
    expect(page.locator('#entry-pane [data-entry="e0000014"]').first).to_be_visible()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press("Escape")
    expect(page.locator("#drawer")).to_be_hidden()
    assert not errors, errors


@pytest.mark.parametrize("path", ["/", "session", "/usage/", "/models/", "/teams/"])
def test_no_page_scrolls_sideways_at_390(page_for, make_user, workspace, path):
    owner = make_user("narrow-owner")
    session = import_branched(owner, str(workspace))
    page = page_for(owner)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/s/{session.pi_id}/" if path == "session" else path)
    page.wait_for_load_state("networkidle")
    assert no_sideways_scroll(page), page.evaluate(WIDEST)
    if path == "session":
        assert box(page, ".session-head")["height"] <= 64


def test_header_follows_runs_live(worker, page_for, llm, make_user, workspace):
    user = make_user("live-head")
    session = new_session(user, workspace)
    sessions.rename_session(session, "live header", actor=user)
    page = page_for(user)
    errors = watch(page)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    expect(page.locator("#session-stats .stat-entries")).to_have_attribute("data-value", "1")
    llm.push(
        text(
            "All done.",
            usage={"prompt_tokens": 1200, "completion_tokens": 34, "total_tokens": 1234},
        )
    )
    page.fill("#chat-input", "hello there")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-transcript")).to_contain_text("All done.", timeout=30000)
    assert wait_run(session).status == "done"
    # Without a reload: the user message and the answer are counted, tokens and the gauge.
    expect(page.locator("#session-stats .stat-entries")).to_have_attribute(
        "data-value", "3", timeout=15000
    )
    expect(page.locator("#session-stats .usage-tokens")).to_have_text("1.2k tokens")
    expect(page.locator("#context-gauge")).to_have_attribute("data-used", "1234")
    assert not errors, errors


def test_phone_width_tree_and_drawer_are_overlays(page_for, make_user, workspace):
    owner = make_user("phone-owner")
    session = import_branched(owner, str(workspace))
    page = page_for(owner)
    errors = watch(page)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    # The chat fills the width; tree and drawer start closed.
    expect(page.locator("#tree-panel")).to_be_hidden()
    expect(page.locator("#drawer")).to_be_hidden()
    chat = box(page, "#chat-panel")
    assert chat["width"] > 360
    assert no_sideways_scroll(page)
    expect(page.locator("#chat-input")).to_be_visible()
    # The tree opens over the chat (the chat keeps its size), a node picked in it closes
    # it and opens the drawer over the chat.
    page.click("#toggle-tree")
    tree = box(page, "#tree-panel")
    assert tree["x"] < 5 and tree["width"] > 300
    assert box(page, "#chat-panel")["width"] == chat["width"]
    expect(page.locator("#overlay-scrim")).to_be_visible()
    page.click("#n-e0000014 .preview")
    expect(page.locator('#entry-pane [data-entry="e0000014"]')).to_be_visible()
    expect(page.locator("#tree-panel")).to_be_hidden()
    drawer = box(page, "#drawer")
    assert drawer["x"] + drawer["width"] <= 391 and drawer["width"] > 300
    page.click("#drawer-close")
    expect(page.locator("#drawer")).to_be_hidden()
    # The gauge and its chart fit the phone too.
    page.click("#context-gauge")
    expect(page.locator('[data-usage-chart="context"][data-ready]')).to_have_count(1)
    assert no_sideways_scroll(page)
    assert not errors, errors


def test_every_page_has_a_favicon(page_for, make_user, workspace):
    owner = make_user("icon-owner")
    session = import_branched(owner, str(workspace))
    page = page_for(owner)
    failed = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    for url in ("/", f"/s/{session.pi_id}/", "/usage/", "/teams/", f"/s/{session.pi_id}/compare/"):
        page.goto(url)
        page.wait_for_load_state("networkidle")
    icon = page.request.get("/favicon.ico")
    assert icon.ok and "svg" in icon.headers["content-type"]
    assert not failed, failed
