"""Every main page in headless Chromium, with no failed request and no console error.

Logged in, the crawl opens the sessions list, the session pages of seeded sessions that
hold every kind of entry part (with the drawer, the inspector, the context chart and the
workspace dialog opened), compare, sharing, a share link (logged in and logged out),
comments, activity, usage, models, teams, search, the jobs panel and each panel's own
endpoint, the HTML export (downloaded, then opened), the login page, a 403 and a 404.
Any response of 400 or more that the crawl did not ask for (a favicon, a static file, an
htmx partial), any console error, script error or Content-Security-Policy violation
fails it.

The routes come from sessions_app/urls.py: every GET route without parameters and every
route of one session alone must be visited, or be listed below as an action (checked to
refuse a GET with 405) or a download (checked to answer 200), so a new page cannot be
left out silently.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.urls import Resolver404, resolve, reverse
from playwright.sync_api import expect

from sessions_app import urls as app_urls
from sessions_app.models import Team, TeamMembership
from sessions_app.services import comments, endpoints, sharing, users
from tests.support.pi1_session import import_pi1_session
from tests.support.tree_data import import_branched

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Routes of no parameter or of one session that are not pages: POST actions (a GET must
# answer 405) and downloads (a GET must answer 200).
ACTIONS = {
    "session_import",
    "session_new",
    "team_create",
    "models_key",
    "models_key_remove",
    "models_test",
    "models_default",
    "models_endpoint",
    "models_endpoint_remove",
    "users_create",
    "templates_save",
    "templates_delete",
    "templates_import",
    "session_rename",
    "session_pin",
    "session_archive",
    "session_tags",
    "session_delete",
    "sharing_team",
    "sharing_link",
    "compare_summary",
    "alternatives_start",
    "alternatives_stop",
    "alternatives_keep",
    "review_comment_add",
    "chat_send",
    "chat_stop",
    "chat_queue",
    "chat_unqueue",
    "chat_model",
    "chat_thinking",
    "chat_compact",
    "workspace_continue",
    "pi_file_write_back",
    "jobs_compact",
    "jobs_settings",
    "api_push",
    "api_push_lines",
    "set_theme",
}
DOWNLOADS = {"usage_csv", "sync_client"}
# The sync API: a bearer token only, so the browser's login gets 401.
TOKEN_API = {"api_whoami", "api_file_state", "api_pending", "api_export", "api_openapi"}

# Shows a CSP violation as a console error, whatever reports it.
CSP_REPORTER = """
document.addEventListener("securitypolicyviolation", (e) => {
  console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI}`);
});
"""


AXE = Axe()
# axe-core's impacts that fail the crawl, on every page it visits, in both themes.
BLOCKING = ("serious", "critical")


class Crawl:
    """A page whose every request, response and console message is watched, and whose
    every page passes axe-core (no serious or critical violation) in the light and the
    dark theme."""

    def __init__(self, page, origin: str):
        self.page, self.origin = page, origin
        self.problems: list[str] = []
        self.routes: set[str] = set()
        self.where = ""
        self.expected: tuple[str, int] | None = None  # a navigation meant to fail
        page.add_init_script(CSP_REPORTER)
        page.on("request", self._request)
        page.on("response", self._response)
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.problems.append(f"{self.where}: {exc}"))

    def _request(self, request) -> None:
        if not request.url.startswith(self.origin):
            return
        try:
            match = resolve(urlsplit(request.url).path)
        except Resolver404:
            return
        if match.namespace == "sessions_app":
            self.routes.add(match.url_name)

    def _is_expected(self, url: str, status: int) -> bool:
        return self.expected is not None and self.expected == (url, status)

    def _response(self, response) -> None:
        if response.status >= 400 and not self._is_expected(response.url, response.status):
            self.problems.append(f"{self.where}: HTTP {response.status} {response.url}")

    def _console(self, message) -> None:
        if message.type != "error":
            return
        if self.expected and message.location.get("url") == self.expected[0]:
            if message.text.startswith("Failed to load resource"):
                return  # Chromium's note on the 403/404 page the crawl asked for
        self.problems.append(f"{self.where}: console: {message.text}")

    def visit(self, path: str, status: int = 200, live: bool = False) -> None:
        url = self.origin + path
        self.where = path
        self.expected = (url, status) if status >= 400 else None
        response = self.page.goto(url)
        assert response is not None and response.status == status, (path, response.status)
        self.settle()
        if live:  # a page with a websocket: it must open
            self.page.wait_for_function("() => document.body.dataset.ws === 'open'")
        if status == 200 and response.text()[:15].lower().startswith("<!doctype"):
            self.check_accessibility()  # a whole page, not an htmx partial or JSON

    def check_accessibility(self) -> None:
        for scheme in ("light", "dark"):
            # no transitions: the colours are final when axe reads them
            self.page.emulate_media(color_scheme=scheme, reduced_motion="reduce")
            self.page.wait_for_timeout(150)
            found = self._blocking()
            if found:  # read again once the page has surely settled: only what stays counts
                self.page.wait_for_timeout(600)
                found = self._blocking()
            self.problems += [f"{self.where} ({scheme}): axe {v}" for v in found]
        self.page.emulate_media(color_scheme="light")

    def _blocking(self) -> list[str]:
        results = AXE.run(self.page).response
        return [
            f"{v['id']} {[n['target'] for n in v['nodes'][:3]]}"
            for v in results["violations"]
            if v["impact"] in BLOCKING
        ]

    def settle(self) -> None:
        self.page.wait_for_load_state("networkidle")


@pytest.fixture
def world(make_user):
    owner = make_user("crawler")
    mate = make_user("crawl-mate")
    pi1 = import_pi1_session(owner)  # usage, system, context edits, tool calls, custom
    branched = import_branched(owner, "/home/crawler/project")  # bash, thinking, summaries
    team = Team.objects.create(name="crawlers")
    TeamMembership.objects.create(team=team, user=owner, role="admin")
    TeamMembership.objects.create(team=team, user=mate, role="viewer")
    sharing.share_with_team(pi1, team.pk, "viewer", actor=owner)
    comments.add_comment(pi1, "b0000002", owner, "why this read?")
    link = sharing.create_link(branched, actor=owner, leaf_pi_id=None)
    # An admin, with an endpoint on the Models page and a user invited on the Users page.
    admin = make_user("crawl-admin", is_staff=True)
    endpoints.save_endpoint(
        admin, "crawl-proxy", "openai-completions", "http://127.0.0.1:9/v1", "crawl-model, 32k"
    )
    invited = users.create_user(admin, "crawl-invited")
    invitation, _ = users.invite(admin, invited)
    return {
        "owner": owner,
        "mate": mate,
        "pi1": pi1,
        "branched": branched,
        "link": link,
        "admin": admin,
        "invitation": invitation,
    }


def test_every_page_loads_without_a_failed_request_or_console_error(
    page_for, asgi_server, world, tmp_path, make_user
):
    origin = asgi_server.url
    pi1, branched = world["pi1"].pi_id, world["branched"].pi_id
    token = world["link"].token
    crawl = Crawl(page_for(world["owner"]), origin)
    page = crawl.page

    crawl.visit("/", live=True)
    page.locator("summary", has_text="Import pi session").click()
    crawl.visit("/?archived=all&sort=name")

    # The session page of every part kind: the drawer, the inspector, the context chart,
    # the workspace dialog, the review panel.
    crawl.visit(f"/s/{pi1}/?filter=all", live=True)
    for entry_id in ("b0000002", "b0000003", "b00000u1", "b00000s1", "b00000e3", "b00000x1"):
        page.click(f"#n-{entry_id} .preview")
        expect(page.locator(f'#entry-pane [data-entry="{entry_id}"]').first).to_be_visible()
        crawl.settle()
    page.locator("#entry-pane button", has_text="Inspect context here").click()
    expect(page.locator("#inspector-pane .inspector")).to_be_visible()
    page.click("#context-gauge")
    expect(page.locator('[data-usage-chart="context"][data-ready]')).to_have_count(1)
    page.keyboard.press("Escape")
    page.click("#chat-input")  # (a session with no usable folder asks only then)
    workspace_box = page.locator("#workspace-box")
    if workspace_box.get_attribute("open") is None:
        workspace_box.locator("summary").click()
    expect(workspace_box.locator("form")).to_be_visible()
    crawl.settle()
    # The chat's live partials (the queue, the model notice), as the socket's events ask
    # for them when the session changes after the page was drawn.
    with page.expect_response(lambda r: "/chat/queued/" in r.url):
        with page.expect_response(lambda r: "/chat/model-notice/" in r.url):
            page.evaluate(
                "() => { htmx.trigger(document.body, 'piweb:queue_changed');"
                " htmx.trigger(document.body, 'piweb:session_changed'); }"
            )
    crawl.settle()

    crawl.visit(f"/s/{branched}/", live=True)
    for entry_id in ("e000000c", "e0000011", "e00000c1", "e0000b51", "e0000014"):
        page.click(f"#n-{entry_id} .preview")
        expect(page.locator(f'#entry-pane [data-entry="{entry_id}"]').first).to_be_visible()
        crawl.settle()
    # The HTML export, downloaded from the review panel and opened (once the panel's
    # comments follow the last entry: their swap moves the link while it loads).
    expect(page.locator("#rv-selected-id")).to_have_text("e0000014")
    expect(page.locator("#review-comments")).not_to_contain_text("Loading comments")
    crawl.settle()
    export_link = page.locator("a.rv-export[data-format=html]")
    export_link.scroll_into_view_if_needed()
    with page.expect_download() as download:
        export_link.click()
    export = tmp_path / "export.html"
    download.value.save_as(export)
    crawl.where = "the HTML export"
    page.goto(export.as_uri())
    expect(page.locator("body.rv-export")).to_be_visible()
    crawl.settle()

    # Each page of one session, and each panel's own endpoint opened as a page.
    for path in (
        f"/s/{branched}/compare/?a=e0000014&b=e0000016",
        f"/s/{branched}/compare/files/?a=e0000014&b=e0000016",
        f"/s/{branched}/alternatives/?at=e0000004",
        f"/s/{branched}/alternatives/columns/?at=e0000004",
        f"/s/{pi1}/sharing/",
        f"/s/{pi1}/review/",
        f"/s/{pi1}/review/comments/?entry=b0000002",
        f"/s/{pi1}/review/counts.json",
        f"/s/{pi1}/activity/",
        f"/s/{pi1}/jobs/",
        f"/s/{pi1}/stats/",
        f"/s/{pi1}/provenance/",
        f"/s/{pi1}/tree/",
        f"/s/{pi1}/inspect/",
        f"/s/{pi1}/chat/transcript/",
        f"/s/{pi1}/chat/state/",
        f"/s/{pi1}/pi-file/",
        f"/s/{pi1}/usage/chart/",
        f"/l/{token}/",
        "/sessions/table/",
        "/search/?q=flaky",
        "/usage/",
        "/models/",
        "/teams/",
        "/sync/",
        "/account/password/",
    ):
        crawl.visit(path)

    # The Templates page: a template saved through its htmx form, then opened for editing.
    crawl.visit("/templates/")
    page.fill("#templates-name", "crawl")
    page.fill("#templates-text", "---\nargument-hint: <what>\n---\nCrawl $1")
    page.click("#templates-form button[type=submit]")
    expect(page.locator('#templates-list tr[data-template="crawl"]')).to_be_visible()
    page.locator('#templates-list tr[data-template="crawl"] button', has_text="Edit").click()
    expect(page.locator("#templates-text")).to_have_value(
        "---\nargument-hint: <what>\n---\nCrawl $1"
    )
    crawl.settle()

    # A page the user may not open (a viewer on the sharing page), and one that is not there.
    crawl.visit("/s/no-such-session/", status=404)
    crawl.visit("/no/such/page/", status=404)
    viewer = Crawl(page_for(world["mate"]), origin)
    viewer.visit(f"/s/{pi1}/", live=True)
    viewer.visit(f"/s/{pi1}/sharing/", status=403)
    # Someone with no session yet: the sessions list's first-run state.
    newcomer = Crawl(page_for(make_user("crawl-newcomer")), origin)
    newcomer.visit("/", live=True)
    newcomer.page.locator("#first-run").wait_for()
    # An admin: the Models page's endpoints, the Users page, a user added there (its
    # invitation link shown once), and the 403 of the Users page to anyone else.
    admin = Crawl(page_for(world["admin"]), origin)
    admin.visit("/models/")
    admin.page.locator("#endpoint-form").wait_for()
    # the providers without a key, folded: unfolded, axe checks their table too
    admin.page.click("#models-providers-table details.more-rows > summary")
    admin.page.locator("#models-providers-table details.more-rows table").wait_for()
    admin.check_accessibility()
    admin.visit("/users/")
    admin.page.fill("#users-create-username", "crawl-added")
    admin.page.click("#users-create button[type=submit]")
    admin.page.locator("#invitation-link").wait_for()
    admin.settle()
    admin.check_accessibility()
    viewer.visit("/users/", status=403)

    # Logged out: the login page, the share link and its export.
    visitor = Crawl(page_for(None), origin)
    visitor.visit("/login/")
    visitor.visit(f"/invite/{world['invitation']}/")
    visitor.page.locator("#invitation-form").wait_for()
    visitor.visit(f"/l/{token}/", live=True)
    visitor.page.locator(".rv-node").first.wait_for()

    problems = (
        crawl.problems + viewer.problems + newcomer.problems + admin.problems + visitor.problems
    )
    assert not problems, "\n".join(problems)

    # Every page route was visited, or is an action or a download that says so.
    visited = crawl.routes | viewer.routes | admin.routes | visitor.routes
    for name in sorted(ACTIONS):
        answer = page.request.get(origin + _path_of(name, pi1))
        assert answer.status == 405, f"{name}: listed as an action, but GET gives {answer.status}"
    for name in sorted(DOWNLOADS):
        assert page.request.get(origin + _path_of(name, pi1)).status == 200, name
    for name in sorted(TOKEN_API):
        assert page.request.get(origin + _path_of(name, pi1)).status == 401, name
    pages = {name for name, params in _routes() if params <= {"session_id"}}
    missed = pages - visited - ACTIONS - DOWNLOADS - TOKEN_API
    assert not missed, f"routes neither visited nor listed as not a page: {sorted(missed)}"
    assert not (ACTIONS | DOWNLOADS | TOKEN_API) - pages, (
        "a listed route is gone or takes parameters"
    )


def test_the_main_pages_at_phone_width_load_without_a_failed_request_or_console_error(
    page_for, asgi_server, world
):
    """At 390 px the tree and the drawer become overlays: the same pages, the same rule."""
    pi1, branched = world["pi1"].pi_id, world["branched"].pi_id
    crawl = Crawl(page_for(world["owner"]), asgi_server.url)
    crawl.page.set_viewport_size({"width": 390, "height": 844})
    crawl.visit("/", live=True)
    crawl.visit(f"/s/{pi1}/?filter=all", live=True)
    crawl.visit(f"/s/{branched}/", live=True)
    for path in (
        f"/s/{branched}/compare/?a=e0000014&b=e0000016",
        f"/s/{branched}/alternatives/?at=e0000004",
        f"/s/{pi1}/sharing/",
        f"/s/{pi1}/activity/",
        f"/l/{world['link'].token}/",
        "/search/?q=flaky",
        "/usage/",
        "/models/",
        "/templates/",
        "/teams/",
        "/account/password/",
    ):
        crawl.visit(path)
    admin = Crawl(page_for(world["admin"]), asgi_server.url)
    admin.page.set_viewport_size({"width": 390, "height": 844})
    admin.visit("/models/")
    admin.visit("/users/")
    problems = crawl.problems + admin.problems
    assert not problems, "\n".join(problems)


def _routes() -> list[tuple[str, set[str]]]:
    """(name, parameter names) of every route of sessions_app/urls.py."""
    return [(p.name, set(p.pattern.converters)) for p in app_urls.urlpatterns]


def _path_of(name: str, session_id: str) -> str:
    params = dict(_routes())[name]
    kwargs = {"session_id": session_id} if params else {}
    return reverse(f"sessions_app:{name}", kwargs=kwargs)
