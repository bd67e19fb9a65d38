"""Review in headless Chromium: share a branch link and open it logged out; comment and
resolve; search and land on the node; compare two branches (summary by the real worker);
download the HTML export and open it offline with the network blocked."""

import threading

import pytest
from playwright.sync_api import expect

from sessions_app.models import Comment, SessionShare, ShareLink, Team, TeamMembership
from sessions_app.services import tree
from tests.support.review_data import assistant, build_branchy_session
from tests.support.waiting import wait_db

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_share_a_branch_link_and_open_it_logged_out(page_for, make_user, artifact_dir):
    owner = make_user("owner")
    data = build_branchy_session(owner)
    ids = data.ids
    page = page_for(owner)
    page.goto(f"/s/{data.session.pi_id}/sharing/?leaf={ids['a3']}&target={ids['a2']}")
    page.check("input[name=scope][value=subtree]")  # the node and everything under it
    page.click("#rv-create-link")
    link_url = page.input_value("#rv-new-link")
    link = ShareLink.objects.get()
    assert link.leaf_pi_id == ids["a3"] and link.target_pi_id == ids["a2"]
    assert link.scope == ShareLink.Scope.SUBTREE

    visitor = page_for(None)  # logged out
    visitor.goto(link_url)
    expect(visitor.locator(".rv-live-note")).to_contain_text("a node and everything under it")
    expect(visitor.locator(".rv-live-note")).to_contain_text("as they are now")
    expect(visitor.locator(f"#e-{ids['a3']}")).to_contain_text("Fixed the parser")
    expect(visitor.locator(f"#e-{ids['a2']}")).to_have_class(
        "rv-entry rv-type-message rv-role-assistant rv-target"
    )
    assert visitor.locator(f"#e-{ids['b3']}").count() == 0
    # read-only: no comment box, no actions
    assert visitor.locator("textarea, .rv-comment-form, #chat-panel").count() == 0
    # only the shared branch: no row of branch B in the tree
    assert visitor.locator(f".rv-node[data-entry-id='{ids['b3']}']").count() == 0
    # the websocket opens with the token and the page notices when the branch grows
    visitor.wait_for_function("() => document.body.dataset.ws === 'open'")
    # (from another thread: Playwright's loop runs in this one, and publishing uses async_to_sync)
    appended = {}

    def grow():
        tree.append_entry(data.session, assistant("On branch B, not shared."), actor=owner)
        appended["entry"] = tree.append_entry(
            data.session,
            assistant("Live update after sharing."),
            parent_pi_id=ids["a3"],
            actor=owner,
        )

    worker_thread = threading.Thread(target=grow)
    worker_thread.start()
    worker_thread.join(30)
    expect(visitor.locator(".rv-changed")).to_be_visible()
    visitor.screenshot(path=str(artifact_dir / "review-share-link.png"))
    # what grew below the shared entry is a click away in the tree; branch B is not
    new_id = appended["entry"].pi_id
    visitor.reload()
    visitor.click(f".rv-node[data-entry-id='{new_id}'] a")
    expect(visitor.locator(f"#e-{new_id}")).to_contain_text("Live update after sharing.")
    assert visitor.locator("text=On branch B, not shared.").count() == 0
    visitor.wait_for_function("() => document.body.dataset.ws === 'open'")

    # revoked: the open page is told at once (socket closed 4403), and the link is gone
    page.goto(f"/s/{data.session.pi_id}/sharing/")
    page.click(".rv-links-table button:has-text('Revoke')")
    wait_db(lambda: ShareLink.objects.get(pk=link.pk).revoked_at)
    expect(visitor.locator(".rv-link-gone")).to_be_visible()
    response = visitor.goto(link_url)
    assert response.status == 404


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
