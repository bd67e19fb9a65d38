"""The page views (sessions_app/views/pages.py): the session list, import, a new session,
the session page and its provenance panel."""

import os
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app.models import Session
from sessions_app.services import sessions
from tests.support.access import Call, each, login_redirects, post, statuses
from tests.support.web import client_for, post_import
from tests.support.workspaces import area_of

pytestmark = [pytest.mark.django_db]

ANY_USER = [
    Call("session_list", per_session=False),
    Call("session_table", per_session=False),
    post("session_import", per_session=False),
    post("session_new", {"cwd": "/tmp/x"}, per_session=False),
]
SESSION_PAGES = [Call("session_detail"), Call("session_provenance")]


@pytest.fixture
def owner(make_user):
    return make_user("owner")


def test_it_requires_login(shared):
    calls = ANY_USER + SESSION_PAGES
    assert login_redirects(calls, shared.session) == each(calls, "/login/")
    assert not Session.objects.exclude(pk=shared.session.pk).exists()


def test_it_requires_a_share_of_the_session(shared):
    strangers = statuses(client_for(shared.stranger), SESSION_PAGES, shared.session)
    assert strangers == each(SESSION_PAGES, 404)
    viewers = statuses(client_for(shared.viewer), SESSION_PAGES, shared.session)
    assert viewers == each(SESSION_PAGES, 200)


@pytest.mark.usefixtures("fresh_workspace_root")
def test_the_page_of_a_session_without_entries_renders(make_user, settings):
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd=str(area_of(settings, owner)))
    assert session.leaf_id is None
    response = client_for(owner).get(reverse("sessions_app:session_detail", args=[session.pi_id]))
    assert response.status_code == 200
    assert 'data-review-leaf=""' in response.content.decode()


@pytest.mark.usefixtures("fresh_workspace_root")
def test_a_new_session_is_made_only_inside_the_users_own_area(make_user, settings):
    alice, bob = make_user(), make_user()
    alice_proj = area_of(settings, alice) / "proj"
    alice_proj.mkdir(parents=True, exist_ok=True)
    c = client_for(bob)
    new = reverse("sessions_app:session_new")
    for cwd in (str(alice_proj), str(settings.PIWEB_WORKSPACE_ROOTS[0]), "/etc", "relative/x"):
        response = c.post(new, {"cwd": cwd, "name": "x"})
        assert response.status_code == 400, cwd
    assert not Session.objects.filter(owner=bob).exists()
    # a symlink in bob's area pointing into alice's is refused too
    os.symlink(alice_proj, area_of(settings, bob) / "sneaky")
    assert c.post(new, {"cwd": str(area_of(settings, bob) / "sneaky")}).status_code == 400
    mine = area_of(settings, bob) / "fresh-project"
    response = c.post(new, {"cwd": str(mine), "name": "Mine"})
    assert response.status_code == 302
    assert mine.is_dir()  # created on demand
    session = Session.objects.get(owner=bob)
    assert session.cwd == str(mine) and session.name == "Mine"


@pytest.mark.usefixtures("fresh_workspace_root")
def test_a_new_session_with_a_name_is_created_with_its_name(make_user, settings):
    owner = make_user()
    cwd = area_of(settings, owner) / "named"
    response = client_for(owner).post(
        reverse("sessions_app:session_new"), {"cwd": str(cwd), "name": "Named"}
    )
    assert response.status_code == 302
    session = Session.objects.get(owner=owner)
    assert session.name == "Named"
    assert session.entries.filter(type="session_info").count() == 1


@pytest.mark.usefixtures("fresh_workspace_root")
def test_a_new_session_gets_a_fresh_folder_or_one_picked_from_the_users_folders(
    make_user, settings
):
    owner, other = make_user(), make_user()
    c = client_for(owner)
    new = reverse("sessions_app:session_new")
    area = area_of(settings, owner)
    # No folder given: a fresh one named after the session, never one already there.
    assert c.post(new, {"name": "Parser fix!"}).status_code == 302
    assert c.post(new, {"name": "Parser fix!"}).status_code == 302
    cwds = sorted(Session.objects.filter(owner=owner).values_list("cwd", flat=True))
    assert cwds == [str(area / "parser-fix"), str(area / "parser-fix-2")]
    assert (area / "parser-fix").is_dir() and (area / "parser-fix-2").is_dir()
    # Without a name, after the time.
    assert c.post(new, {}).status_code == 302
    unnamed = Session.objects.filter(owner=owner).order_by("-pk").first()
    assert os.path.basename(unnamed.cwd).startswith("session-")
    # The form lists the user's folders to pick from; a pick is used as it is.
    page = c.get(reverse("sessions_app:session_list")).content.decode()
    assert f'<option value="{area / "parser-fix"}">' in page
    assert 'name="cwd"' not in page  # no path to type
    assert c.post(new, {"folder": str(area / "parser-fix")}).status_code == 302
    assert Session.objects.filter(owner=owner, cwd=str(area / "parser-fix")).count() == 2
    # A folder not in the list (another user's, or anywhere else) is refused.
    theirs = area_of(settings, other) / "theirs"
    theirs.mkdir(parents=True)
    for folder in (str(theirs), "/etc", str(area / "missing")):
        response = c.post(new, {"folder": folder})
        assert (
            response.status_code == 400 and "Pick one of your folders" in response.content.decode()
        )
    assert Session.objects.filter(owner=owner).count() == 4


def test_the_first_run_shows_three_ways_in_instead_of_an_empty_table(owner, workspace):
    c = client_for(owner)
    listing = reverse("sessions_app:session_list")
    page = c.get(listing).content.decode()
    assert 'id="first-run"' in page and 'id="sessions-table"' not in page
    for action in ("first-run-import", "first-run-follow", "first-run-new"):
        assert f'id="{action}"' in page
    assert "PIWEB_PI_SESSION_DIRS" in page and "docs/sync.md" in page
    assert 'data-pick-files="import-files"' in page
    assert 'data-open-details="new-session-card"' in page
    assert 'id="session-filters"' not in page  # no filter bar over nothing
    # The live refresh (its table partial) says the same until a session exists.
    assert 'id="first-run"' in c.get(reverse("sessions_app:session_table")).content.decode()
    sessions.create_session(owner=owner, cwd=str(workspace), name="First")
    page = c.get(listing).content.decode()
    assert 'id="first-run"' not in page and 'id="sessions-table"' in page
    # A filter that matches nothing is not a first run.
    page = c.get(listing, {"q": "zzzz-nothing"}).content.decode()
    assert 'id="first-run"' not in page and "No session matches" in page


def test_sessions_list_search_import_and_new(owner, workspace):
    c = client_for(owner)
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.support.tree_data import branched_jsonl

    upload = SimpleUploadedFile(
        "b.jsonl", branched_jsonl(str(workspace), session_id=str(uuid.uuid4()))
    )
    response = post_import(c, {"file": upload}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200, html
    assert "created" in html and "1 malformed line skipped" in html and "line 6" in html
    bad = SimpleUploadedFile("bad.jsonl", b"not json at all\n")
    response = post_import(c, {"file": bad}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400 and "Import failed" in response.content.decode()
    listing = c.get(reverse("sessions_app:session_list"), {"q": "approach C"}).content.decode()
    assert "Imported" in listing and "Set up the project" in listing
    assert (
        "No session matches"
        in c.get(reverse("sessions_app:session_list"), {"q": "zzzz-nothing"}).content.decode()
    )
    response = c.post(reverse("sessions_app:session_new"), {"cwd": "/etc", "name": "x"})
    assert response.status_code == 400 and "inside a workspace root" in response.content.decode()
    response = c.post(reverse("sessions_app:session_new"), {"cwd": str(workspace), "name": "Fresh"})
    assert response.status_code == 302
    assert Session.objects.filter(owner=owner, name="Fresh", source="live").exists()


def test_the_live_refresh_of_the_list_is_the_table_alone_through_the_users_rights(shared):
    """What an open sessions list fetches when its websocket says sessions changed: the
    table and pager partial, for the page's own query, through the user's rights."""
    page = client_for(shared.viewer).get(reverse("sessions_app:session_list"), {"sort": "entries"})
    html = page.content.decode()
    table_url = reverse("sessions_app:session_table")
    assert "data-piweb-sessions-list" in html
    assert f'hx-get="{table_url}?sort=entries&amp;page=1"' in html
    response = client_for(shared.viewer).get(table_url, {"sort": "entries"})
    partial = response.content.decode()
    assert response.status_code == 200 and "<html" not in partial
    assert f'data-session="{shared.session.pi_id}"' in partial
    assert 'class="sort asc" href="?sort=-entries"' in partial  # (the page's own query)
    assert "Import pi session" not in partial
    stranger = client_for(shared.stranger).get(table_url).content.decode()
    # (The stranger sees no session at all: the first-run state, without this one.)
    assert 'id="first-run"' in stranger and shared.session.pi_id not in stranger
    anonymous = Client().get(table_url)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
