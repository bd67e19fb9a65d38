"""The permissions matrix: {owner, team editor, team viewer, share-link visitor, stranger,
anonymous} × {every route of sessions_app.urls, the websocket, export, search}.

Routes are collected from sessions_app.urls at run time: a route that is not classified
in ROUTES below fails `test_every_route_is_classified`, so new views must declare the
right they need here. Expected codes are exact; responses that refuse must not leak the
session's name, text or ids.

Personas
- owner; editor / viewer: members of teams the session is shared with at that role;
- team_viewer: a member with the team role "viewer" of the team that holds the editor
  share: a viewer, whatever the share says;
- reviewer: a member with the team role reviewer of a team the session is shared with as
  viewer (reads, and scores with the team's configs);
- link: a logged-out visitor who holds a valid share link token (it rides along as
  ?share=TOKEN on every request: it must not open anything but the link pages);
- expired_link: the same with a link that has expired: not even the link pages open;
- stranger: logged in, no rights; anonymous: logged out, no token.
"""

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from sessions_app.models import (
    Comment,
    Job,
    Score,
    SessionShare,
    ShareLink,
    Team,
    TeamMembership,
)
from sessions_app.selectors.sessions import ListFilters
from sessions_app.services import comments, review_queues, scores, sharing
from tests.support.branchy_session import build_branchy_session

SECRET_NAME = "Secret-Session-Name-7f3a"
SECRET_CWD = "/work/secret-project-91b2"
PERSONAS = (
    "anonymous",
    "link",
    "expired_link",
    "stranger",
    "viewer",
    "team_viewer",
    "reviewer",
    "editor",
    "owner",
)
LOGGED_OUT = ("anonymous", "link", "expired_link")
RANK = {"viewer": 1, "team_viewer": 1, "reviewer": 2, "editor": 3, "owner": 4}


@dataclass
class Route:
    # viewer | reviewer | editor | owner | login | link | team (a member of the viewers
    # team) | reviewers (a member of the reviewers team) | reviewers_admin (its admin) |
    # admin (a staff user; no persona is one) | public (anyone) | token (the sync API: a bearer token only; a login opens nothing)
    need: str
    method: str = "GET"
    ok: int = 200  # status for a persona that has the right
    kwargs: dict = field(default_factory=dict)  # values are World attribute names
    query: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    htmx: bool = False


S = {"session_id": "sid"}
E = {"session_id": "sid", "entry_id": "entry"}

ROUTES: dict[str, Route] = {
    # pages (lead)
    "session_list": Route("login"),
    "session_table": Route("login", htmx=True),
    "session_import": Route("login", "POST", ok=400),  # no file: refused after login
    # a folder that is not one of the user's: refused after login
    "session_new": Route("login", "POST", ok=400, data={"folder": "/nowhere"}),
    # an import job is its uploader's alone: a job of another kind is nobody's import
    "import_status": Route("login", ok=404, kwargs={"job_id": "job_pk"}),
    "session_detail": Route("viewer", kwargs=S),
    "session_provenance": Route("viewer", kwargs=S),
    "session_stats": Route("viewer", kwargs=S),
    # managing a session (a missing delete confirmation changes nothing: back to the page)
    "session_rename": Route("editor", "POST", ok=302, kwargs=S, data={"name": "renamed"}),
    "session_pin": Route("editor", "POST", ok=302, kwargs=S, data={"pinned": "1"}),
    "session_archive": Route("editor", "POST", ok=302, kwargs=S, data={"archived": "0"}),
    "session_tags": Route("editor", "POST", ok=302, kwargs=S, data={"tags": "x"}),
    "session_delete": Route("owner", "POST", ok=302, kwargs=S),
    # tree
    "tree_panel": Route("viewer", kwargs=S),
    "tree_branch": Route("viewer", kwargs={**S, "head_id": "branch_head"}),
    "tree_children": Route("viewer", kwargs={**S, "node_id": "entry"}),
    "tree_run": Route("viewer", kwargs={**S, "first_id": "entry", "last_id": "entry"}),
    "entry_pane": Route("viewer", kwargs=E),
    "entry_output": Route("viewer", ok=404, kwargs=E),  # no full output file on this entry
    "entry_text": Route("viewer", kwargs=E),
    "entry_raw": Route("viewer", kwargs=E),
    "entry_navigate": Route("editor", "POST", ok=200, kwargs=E, htmx=True),
    "entry_label": Route("editor", "POST", ok=200, kwargs=E, data={"label": "x"}, htmx=True),
    "entry_archive": Route("editor", "POST", ok=200, kwargs=E, data={"archive": "1"}, htmx=True),
    "entry_fork": Route("editor", "POST", ok=200, kwargs=E, htmx=True),
    "inspector": Route("viewer", kwargs=S),
    # file changes (this session's cwd is no workspace here: nothing to restore)
    "changes_entry": Route("viewer", kwargs=E),
    "changes_branch": Route("viewer", kwargs=E),
    "changes_compare": Route("viewer", kwargs=S, query={"a": "entry", "b": "other_leaf"}),
    "changes_restore": Route("editor", "POST", ok=400, kwargs=E, htmx=True),
    "changes_undo": Route("editor", "POST", ok=400, kwargs=E, htmx=True),
    # chat
    "chat_send": Route("editor", "POST", ok=400, kwargs=S, htmx=True),  # empty message
    # where the session continues: an unknown kind is refused after the rights check
    "workspace_continue": Route("editor", "POST", ok=400, kwargs=S, htmx=True),
    "pi_file": Route("viewer", kwargs=S),  # (not followed: an empty box)
    "pi_file_write_back": Route("editor", "POST", ok=400, kwargs=S, htmx=True),
    "chat_stop": Route("editor", "POST", ok=200, kwargs=S, htmx=True),
    # nothing runs: a queued message is refused (400) after the rights check
    "chat_queue": Route("editor", "POST", ok=400, kwargs=S, data={"text": "hi"}, htmx=True),
    "chat_unqueue": Route("editor", "POST", ok=409, kwargs=S, data={"item": "1"}, htmx=True),
    "chat_queued": Route("viewer", kwargs=S),
    "chat_model": Route("editor", "POST", ok=400, kwargs=S, data={"profile": "nope"}, htmx=True),
    "chat_thinking": Route("editor", "POST", ok=400, kwargs=S, data={"level": "nope"}, htmx=True),
    "chat_compact": Route("editor", "POST", ok=200, kwargs=S, htmx=True),  # the box's /compact
    "chat_transcript": Route("viewer", kwargs=S),
    "chat_state": Route("viewer", kwargs=S),
    "chat_model_notice": Route("viewer", kwargs=S),
    # jobs
    "jobs_panel": Route("viewer", kwargs=S),
    "jobs_compact": Route("editor", "POST", ok=200, kwargs=S, htmx=True),
    "jobs_settings": Route("editor", "POST", ok=400, kwargs=S, htmx=True),  # missing numbers
    # review
    "review_list": Route("viewer", kwargs=S),
    "review_comments": Route("viewer", kwargs=S, query={"entry": "entry"}),
    "review_comment_add": Route(
        "viewer", "POST", kwargs=S, data={"entry": "entry", "body": "hello"}, htmx=True
    ),
    # The owner's thread: a viewer may resolve only threads they started
    # (tests/service/test_comments.py), so here editors and up.
    "review_comment_resolve": Route(
        "editor", "POST", kwargs={**S, "comment_id": "comment_pk"}, htmx=True
    ),
    "review_comment_reopen": Route(
        "editor", "POST", kwargs={**S, "comment_id": "comment_pk"}, htmx=True
    ),
    "review_comment_counts": Route("viewer", kwargs=S),
    "activity": Route("viewer", kwargs=S, htmx=True),
    "sharing": Route("owner", kwargs=S),
    "sharing_team": Route(
        "owner", "POST", ok=302, kwargs=S, data={"team": "team_pk", "role": "viewer"}
    ),
    "sharing_team_revoke": Route("owner", "POST", ok=302, kwargs={**S, "share_id": "share_pk"}),
    "sharing_link": Route("owner", "POST", kwargs=S),
    "sharing_link_revoke": Route("owner", "POST", ok=302, kwargs={**S, "link_id": "spare_link_pk"}),
    "export": Route("viewer", kwargs={**S, "fmt": "html"}),
    "compare": Route("viewer", kwargs=S, query={"a": "entry", "b": "other_leaf"}),
    "alternatives": Route("viewer", kwargs=S, query={"at": "entry"}),
    "alternatives_columns": Route("viewer", kwargs=S, query={"at": "entry"}, htmx=True),
    # no variant given: refused after the rights check
    "alternatives_start": Route(
        "editor", "POST", ok=400, kwargs=S, data={"at": "entry"}, htmx=True
    ),
    "alternatives_stop": Route("editor", "POST", kwargs=S, data={"at": "entry"}, htmx=True),
    "alternatives_keep": Route(
        "editor", "POST", ok=404, kwargs=S, data={"at": "entry", "run": "x"}, htmx=True
    ),
    "compare_summary": Route(  # a paid LLM job: editors and owners only
        "editor", "POST", kwargs=S, data={"a": "entry", "b": "other_leaf"}, htmx=True
    ),
    "compare_job": Route("viewer", kwargs={**S, "job_id": "job_pk"}),
    "share_link": Route("link", kwargs={"token": "token"}),
    "share_link_export": Route("link", kwargs={"token": "token", "fmt": "md"}),
    "search": Route("login", query={"q": "zebrafish"}),
    "teams": Route("login"),
    "team_create": Route("login", "POST", ok=302, data={"name": "new team"}),
    # a team's own routes: its members only (others do not see it); non-admins are told no
    "team_invite": Route(
        "team", "POST", ok=302, kwargs={"team_id": "team_pk"}, data={"username": "x"}
    ),
    "team_role": Route(
        "team",
        "POST",
        ok=302,
        kwargs={"team_id": "team_pk", "member_id": "member_pk"},
        data={"role": "admin"},
    ),
    "team_remove": Route(
        "team", "POST", ok=302, kwargs={"team_id": "team_pk", "member_id": "member_pk"}
    ),
    "team_leave": Route("team", "POST", ok=302, kwargs={"team_id": "team_pk"}),
    # scores: admins manage configs (others are told no on the teams page); reviewers and
    # up score; a score is taken back by its author only (here a stranger's: 404 for all)
    "team_score_add": Route(
        "team", "POST", ok=302, kwargs={"team_id": "team_pk"}, data={"name": "q", "kind": "boolean"}
    ),
    "team_score_edit": Route(
        "team",
        "POST",
        ok=302,
        kwargs={"team_id": "team_pk", "config_id": "config_pk"},
        data={"name": "q", "min": "1", "max": "5"},
    ),
    "team_score_delete": Route(
        "team", "POST", ok=302, kwargs={"team_id": "team_pk", "config_id": "config_pk"}
    ),
    "entry_scores": Route("viewer", kwargs=E),
    # review queues: the reviewers team's (reviewer, editor and the owner, its admin)
    "queues": Route("reviewers", kwargs={"team_id": "reviewers_pk"}),
    "queue_create": Route(
        "reviewers_admin",
        "POST",
        ok=302,
        kwargs={"team_id": "reviewers_pk"},
        data={"name": "q", "scope": "branch_ends"},
    ),
    "queue_assign": Route(
        "reviewers_admin",
        "POST",
        ok=302,
        kwargs={"queue_id": "queue_pk"},
        data={"usernames": "reviewer_name"},
    ),
    "queue_items": Route("reviewers", kwargs={"queue_id": "queue_pk"}),
    "queue_item_assign": Route(
        "reviewers_admin",
        "POST",
        ok=302,
        kwargs={"queue_id": "queue_pk", "item_id": "item_pk"},
        data={"username": "reviewer_name"},
    ),
    "queue_review": Route("reviewers", kwargs={"queue_id": "queue_pk"}),
    "queue_dataset": Route("reviewers", kwargs={"queue_id": "queue_pk"}),
    "team_dataset": Route("reviewers", kwargs={"team_id": "reviewers_pk"}),
    # an item nobody holds: not theirs to score or skip (409) once the rights are checked
    "queue_score": Route(
        "reviewers",
        "POST",
        ok=409,
        kwargs={"queue_id": "queue_pk", "item_id": "item_pk"},
        data={"config": "config_pk", "value": "3"},
    ),
    "queue_skip": Route(
        "reviewers", "POST", ok=409, kwargs={"queue_id": "queue_pk", "item_id": "item_pk"}
    ),
    "score_set": Route(
        "reviewer", "POST", kwargs=E, data={"config": "config_pk", "value": "4"}, htmx=True
    ),
    "score_delete": Route(
        "reviewer", "POST", ok=404, kwargs={**E, "score_id": "score_pk"}, htmx=True
    ),
    # usage
    "usage_context_chart": Route("viewer", kwargs=S),
    "usage_dashboard": Route("login"),  # counts only what the caller can see
    "usage_csv": Route("login"),
    # models: each user's own keys and defaults
    "models_page": Route("login"),
    "models_key": Route("login", "POST", ok=302, data={"provider": "openai", "key": ""}),
    "models_key_remove": Route("login", "POST", ok=302, data={"provider": "openai"}),
    "models_test": Route("login", "POST", ok=302, data={"model": "nope/nothing"}),
    "models_default": Route("login", "POST", ok=302, data={"model": "", "thinking": ""}),
    # admins only (no persona here is one: tests/e2e/test_users_browser.py and
    # test_model_endpoints_browser.py are an admin's side)
    "models_endpoint": Route("admin", "POST", data={"provider": "x", "api": "openai-completions"}),
    "models_endpoint_remove": Route("admin", "POST", data={"provider": "x"}),
    "users": Route("admin"),
    "users_create": Route("admin", "POST", data={"username": "someone-new"}),
    "users_active": Route("admin", "POST", kwargs={"user_id": 1}, data={"active": "0"}),
    "users_invite": Route("admin", "POST", kwargs={"user_id": 1}),
    "users_admin": Route("admin", "POST", kwargs={"user_id": 1}, data={"admin": "1"}),
    # an invitation link: anyone who holds a live one (this one is not: 410)
    "invitation": Route("public", ok=410, kwargs={"token": "no-such-invitation"}),
    # each user's own password
    "password": Route("login"),
    # prompt templates: each user's own
    "templates_page": Route("login"),
    "templates_edit": Route("login", ok=404, query={"name": "nope"}),
    "templates_save": Route("login", "POST", ok=400, data={"name": "", "text": ""}),
    "templates_delete": Route("login", "POST", ok=404, data={"name": "nope"}),
    "templates_import": Route("login", "POST"),
    # sync: each user's own tokens; the client for anyone; the API for tokens alone
    "sync_tokens": Route("login"),
    "sync_token_revoke": Route("login", "POST", ok=302, kwargs={"token_pk": 1}),
    "sync_client": Route("public"),
    "api_whoami": Route("token"),
    "api_push": Route("token", "POST"),
    "api_push_lines": Route("token", "POST"),
    "api_openapi": Route("token"),
    "api_file_state": Route("token"),
    "api_pending": Route("token"),
    "api_export": Route("token", kwargs=S),
    # each user's own display preferences
    "set_theme": Route("login", "POST", ok=302, data={"theme": "dark"}),
}


def all_route_names() -> set[str]:
    names = set()

    def walk(patterns, namespace):
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, p.namespace or namespace)
            elif isinstance(p, URLPattern) and namespace == "sessions_app":
                names.add(p.name)

    walk(get_resolver().url_patterns, None)
    return names


def test_every_route_is_classified():
    names = all_route_names()
    assert None not in names, "every sessions_app route needs a name"
    unclassified = sorted(names - set(ROUTES))
    assert not unclassified, (
        f"routes without a row in the permissions matrix: {unclassified}: add them to ROUTES"
    )
    stale = sorted(set(ROUTES) - names)
    assert not stale, f"ROUTES lists routes that no longer exist: {stale}"


class World:
    """One session shared every way, plus the objects the routes need."""

    def __init__(self, make_user=None):
        from django.contrib.auth import get_user_model

        # No password hashing (force_login is enough): keeps 40 worlds fast.
        User = get_user_model()
        self.users = {
            name: User.objects.create(username=f"{name}-{uuid.uuid4().hex[:6]}")
            for name in ("owner", "editor", "viewer", "team_viewer", "reviewer", "stranger")
        }
        owner = self.users["owner"]
        editors, viewers = Team.objects.create(name="editors"), Team.objects.create(name="viewers")
        reviewers = Team.objects.create(name="reviewers")
        TeamMembership.objects.create(team=editors, user=self.users["editor"])
        TeamMembership.objects.create(
            team=editors, user=self.users["team_viewer"], role=TeamMembership.Role.VIEWER
        )
        TeamMembership.objects.create(team=viewers, user=self.users["viewer"], role="viewer")
        TeamMembership.objects.create(team=viewers, user=owner)
        TeamMembership.objects.create(team=reviewers, user=self.users["reviewer"], role="reviewer")
        TeamMembership.objects.create(team=reviewers, user=self.users["editor"], role="editor")
        TeamMembership.objects.create(team=reviewers, user=owner, role="admin")
        data = build_branchy_session(owner, cwd=SECRET_CWD, name=SECRET_NAME)
        self.session = data.session
        self.ids = data.ids
        SessionShare.objects.create(session=self.session, team=editors, role="editor")
        self.share = SessionShare.objects.create(session=self.session, team=viewers, role="viewer")
        SessionShare.objects.create(session=self.session, team=reviewers, role="viewer")
        self.team_pk = viewers.pk
        self.member_pk = TeamMembership.objects.get(team=viewers, user=self.users["viewer"]).pk
        self.sid = self.session.pi_id
        self.entry = data.ids["a3"]
        self.other_leaf = data.ids["b3"]
        self.branch_head = data.ids["a2"]
        self.comment_pk = comments.add_comment(self.session, self.entry, owner, "c").pk
        self.share_pk = self.share.pk
        self.link = sharing.create_link(self.session, actor=owner, leaf_pi_id=self.entry)
        self.token = self.link.token
        self.spare_link_pk = sharing.create_link(self.session, actor=owner, leaf_pi_id=None).pk
        expired = sharing.create_link(self.session, actor=owner, leaf_pi_id=self.entry)
        ShareLink.objects.filter(pk=expired.pk).update(
            expires_at=timezone.now() - timedelta(minutes=1)
        )
        self.expired_token = expired.token
        self.job_pk = Job.objects.create(
            session=self.session,
            kind=Job.Kind.COMPARE_SUMMARY,
            status="done",
            prepared_leaf_pi_id=self.entry,
            target_pi_id=self.other_leaf,
            params={"a": self.entry, "b": self.other_leaf},
            progress={"summary": "s"},
        ).pk
        config = scores.create_config(
            reviewers, actor=owner, name="quality", kind="number", min_value=1, max_value=5
        )
        self.config_pk = config.pk
        self.score_pk = Score.objects.create(
            config=config,
            session=self.session,
            entry=self.session.entries.get(pi_id=self.entry),
            value=3,
            author=self.users["stranger"],
        ).pk
        self.reviewers_pk = reviewers.pk
        self.reviewer_name = self.users["reviewer"].username
        queue = review_queues.create_queue(
            reviewers, actor=owner, name="q", filters=ListFilters(), scope="branch_ends"
        )
        self.queue_pk = queue.pk
        self.item_pk = queue.items.first().pk
        self.secrets = [SECRET_NAME, SECRET_CWD, "zebrafish", *self.ids.values()]

    def client(self, persona: str) -> Client:
        client = Client()
        if persona in self.users:
            client.force_login(self.users[persona])
        return client

    def resolve(self, value):
        return getattr(self, value) if isinstance(value, str) and hasattr(self, value) else value


def expected_status(route: Route, persona: str) -> int:
    if route.need == "link":  # the token is in the URL: whoever holds a live one reads
        return 404 if persona == "expired_link" else route.ok
    if route.need == "public":
        return route.ok
    if route.need == "token":
        return 401  # a login (or a share link) is no token
    if persona in LOGGED_OUT:
        return 302  # to the login page; a share token opens nothing but the link pages
    if route.need == "login":
        return route.ok
    if route.need == "admin":
        return 403
    if route.need == "team":
        return route.ok if persona in ("viewer", "owner") else 404
    if route.need in ("reviewers", "reviewers_admin"):
        if persona not in ("reviewer", "editor", "owner"):
            return 404  # not in the team: its queues do not exist for them
        return route.ok if route.need == "reviewers" or persona == "owner" else 403
    if persona == "stranger":
        return 404  # no role at all: the session does not exist for them
    return route.ok if RANK[persona] >= RANK[route.need] else 403


def call(world: World, name: str, route: Route, persona: str):
    from django.urls import reverse

    kwargs = {k: str(world.resolve(v)) for k, v in route.kwargs.items()}
    if persona == "expired_link" and "token" in kwargs:
        kwargs["token"] = world.expired_token
    url = reverse(f"sessions_app:{name}", kwargs=kwargs)
    query = {k: world.resolve(v) for k, v in route.query.items()}
    if persona in ("link", "expired_link"):
        query["share"] = world.token if persona == "link" else world.expired_token
    data = {k: world.resolve(v) for k, v in route.data.items()}
    headers = {"HTTP_HX_REQUEST": "true"} if route.htmx else {}
    client = world.client(persona)
    if route.method == "GET":
        return client.get(url, query, **headers)
    if query:
        from urllib.parse import urlencode

        url += "?" + urlencode(query)
    return client.post(url, data, **headers)


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(ROUTES))
def test_route_matrix(name, make_user, settings):
    settings.PIWEB_LLM_BASE_URL = ""
    world = World(make_user)
    route = ROUTES[name]
    for persona in PERSONAS:  # weakest first: the owner's mutations come last
        response = call(world, name, route, persona)
        want = expected_status(route, persona)
        assert response.status_code == want, (
            f"{name} as {persona}: got {response.status_code}, expected {want}"
        )
        if want == 302 and persona in LOGGED_OUT and route.need != "link":
            assert "/login/" in response["Location"], f"{name} as {persona}: {response['Location']}"
        if want in (403, 404) or (want == 302 and persona in LOGGED_OUT):
            body = response.content.decode(errors="replace")
            leaked = [s for s in world.secrets if s in body]
            assert not leaked, f"{name} as {persona} ({want}) leaks {leaked}"


@pytest.mark.django_db
@pytest.mark.embedded
def test_link_routes_refuse_revoked_and_expired_tokens_for_everyone(make_user):
    from datetime import timedelta

    from django.utils import timezone

    world = World(make_user)
    sharing.revoke_link(world.session, world.link.pk, actor=world.users["owner"])
    expired = sharing.create_link(world.session, actor=world.users["owner"], leaf_pi_id=None)
    ShareLink.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    for token in (world.token, expired.token, "made-up-token"):
        for persona in PERSONAS:
            client = world.client(persona)
            for url in (f"/l/{token}/", f"/l/{token}/export/html/", f"/l/{token}/export/jsonl/"):
                response = client.get(url)
                assert response.status_code == 404, (url, persona)
                body = response.content.decode()
                assert not [s for s in world.secrets if s in body]


@pytest.mark.django_db
@pytest.mark.embedded
def test_search_matrix(make_user):
    world = World(make_user)
    for persona in PERSONAS:
        response = world.client(persona).get("/search/", {"q": "zebrafish", "share": world.token})
        if persona in LOGGED_OUT:
            assert response.status_code == 302
            continue
        assert response.status_code == 200
        body = response.content.decode()
        if persona == "stranger":  # (the query itself is echoed in the search box)
            assert not [s for s in world.secrets if s in body and s != "zebrafish"], persona
            assert "No matches" in body
        else:
            assert f"/s/{world.sid}/?leaf={world.ids['q2']}" in body, persona


@pytest.mark.django_db
def test_export_matrix_every_format(make_user):
    world = World(make_user)
    for fmt in ("html", "md", "jsonl"):
        for persona in PERSONAS:
            route = Route("viewer", kwargs={**S, "fmt": fmt})
            response = call(world, "export", route, persona)
            want = expected_status(route, persona)
            assert response.status_code == want, (fmt, persona)
            if want == 200:
                body = (
                    b"".join(response.streaming_content)  # (the pi JSONL streams)
                    if response.streaming
                    else response.content
                )
                assert SECRET_NAME in body.decode() or fmt == "jsonl"
                assert fmt != "jsonl" or world.sid in body.decode()
                assert response["Content-Disposition"].startswith("attachment")
        link = world.client("anonymous").get(f"/l/{world.token}/export/{fmt}/")
        # a link exports its branch (HTML, Markdown); the session's pi JSONL is refused
        assert link.status_code == (403 if fmt == "jsonl" else 200), fmt


@pytest.mark.django_db
def test_link_visitor_cannot_comment_or_act_even_when_logged_in(make_user):
    """A logged-in stranger who holds a link reads the link page but gains no member rights."""
    world = World(make_user)
    client = world.client("stranger")
    page = client.get(f"/l/{world.token}/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "rv-comment-form" not in body and "data-comment-id" not in body
    assert (
        client.post(
            f"/s/{world.sid}/review/comments/add/?share={world.token}",
            {"entry": world.entry, "body": "x"},
        ).status_code
        == 404
    )
    assert Comment.objects.filter(body="x").count() == 0


# --- the websocket ----------------------------------------------------------------------


def _ws_outcome(world: World, persona: str, token: str | None):
    from channels.testing import WebsocketCommunicator

    from piweb.asgi import application
    from tests.support.web import session_cookie_for

    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    if persona in world.users:
        cookie = session_cookie_for(world.users[persona])
        headers.append((b"cookie", f"{cookie['name']}={cookie['value']}".encode()))
    path = f"/ws/sessions/{world.sid}/" + (f"?share={token}" if token else "")

    async def scenario():
        communicator = WebsocketCommunicator(application, path, headers=headers)
        connected, code = await communicator.connect(timeout=10)
        result = ("closed", code)
        if connected:
            hello = await communicator.receive_json_from(timeout=10)
            result = ("open", hello["data"]["role"])
        await communicator.disconnect()
        return result

    return asyncio.run(scenario())


@pytest.mark.django_db(transaction=True)
@pytest.mark.embedded
def test_websocket_matrix(make_user, redis_ready):
    world = World(make_user)
    expected = {
        "anonymous": ("closed", 4401),
        "link": ("open", "viewer"),
        "expired_link": ("closed", 4404),
        "stranger": ("closed", 4404),
        "viewer": ("open", "viewer"),
        "team_viewer": ("open", "viewer"),
        "reviewer": ("open", "reviewer"),
        "editor": ("open", "editor"),
        "owner": ("open", "owner"),
    }
    for persona, want in expected.items():
        token = {"link": world.token, "expired_link": world.expired_token}.get(persona)
        assert _ws_outcome(world, persona, token) == want, persona
    # a stranger holding a valid link is a link visitor (read-only)
    assert _ws_outcome(world, "stranger", world.token) == ("open", "viewer")
    # revoked → refused, for everyone who depends on the link
    sharing.revoke_link(world.session, world.link.pk, actor=world.users["owner"])
    assert _ws_outcome(world, "link", world.token) == ("closed", 4404)
    assert _ws_outcome(world, "stranger", world.token) == ("closed", 4404)
    assert _ws_outcome(world, "link", str(uuid.uuid4())) == ("closed", 4404)
