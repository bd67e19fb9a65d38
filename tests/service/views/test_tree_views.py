"""The tree area's views against a real database: page, partials, actions, rights, CSRF."""

import json
import re
import uuid
from pathlib import Path

import pytest
from django.urls import resolve, reverse

from sessions_app.models import Activity, Entry, Session, SessionShare
from sessions_app.services.importer import import_jsonl_stream
from tests.support.access import Call, each, login_redirects, post
from tests.support.pi1_session import import_pi1_session
from tests.support.pi_files import as_file, header, jsonl_text, message
from tests.support.tree_data import bulk_session, import_branched
from tests.support.web import client_for, share
from tests.support.workspaces import area_of, write_project_context

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(make_user):
    return make_user("owner")


@pytest.fixture
def session(owner, workspace):
    return import_branched(owner, str(workspace), session_id=str(uuid.uuid4()))


def url(name, session, *args):
    return reverse(f"sessions_app:{name}", args=[session.pi_id, *args])


def set_full_output_path(session, path) -> None:
    """Point the bash result e0000013 at ``path``, as an imported file may."""
    entry = Entry.objects.get(session=session, pi_id="e0000013")
    payload = entry.payload
    payload["message"]["details"]["fullOutputPath"] = str(path)
    entry.payload = payload
    entry.save(update_fields=["line"])


# --- page and partials ---------------------------------------------------------------


@pytest.mark.embedded
def test_session_page_draws_tree_with_active_path(session, owner, client_for):
    response = client_for(owner).get(url("session_detail", session))
    assert response.status_code == 200
    html = response.content.decode()
    # the leaf (last line of the file) is drawn, highlighted and on the path
    assert 'id="n-e0000014"' in html
    leaf_row = html.split('id="n-e0000014"')[0].rsplit("<div", 1)[1]
    assert "on-path" in leaf_row and "session-leaf" in leaf_row
    # branch point with three branches, side branches drawn, label chip shown
    assert "3 branches" in html
    assert 'id="n-e000000a"' in html and 'id="n-e0000b51"' in html
    assert "checkpoint" in html
    # default filter hides the label entry and the tool-only assistant message
    assert 'id="n-e00000f1"' not in html
    assert 'id="n-e0000012"' not in html
    # never the hostile content unescaped
    assert "<script>window.__pwned" not in html


def test_filters_follow_pi(session, owner, client_for):
    c = client_for(owner)
    all_html = c.get(url("tree_panel", session), {"filter": "all"}).content.decode()
    assert 'id="n-e00000f1"' in all_html and 'id="n-e0000012"' in all_html
    user_only = c.get(url("tree_panel", session), {"filter": "user-only"}).content.decode()
    assert 'id="n-e000000d"' in user_only
    assert 'id="n-e000000b"' not in user_only  # assistant hidden
    no_tools = c.get(url("tree_panel", session), {"filter": "no-tools"}).content.decode()
    assert 'id="n-e0000003"' not in no_tools
    labeled = c.get(url("tree_panel", session), {"filter": "labeled-only"}).content.decode()
    assert 'id="n-e0000004"' in labeled and 'id="n-e000000b"' not in labeled


def test_search_highlights_matches(session, owner, client_for):
    html = client_for(owner).get(url("tree_panel", session), {"q": "approach"}).content.decode()
    assert "<mark>approach</mark>" in html.lower() or "<mark>Approach</mark>" in html
    assert "match" in html


def test_deep_link_selects_target_on_other_branch(session, owner, client_for):
    response = client_for(owner).get(
        url("session_detail", session), {"leaf": "e000000e", "target": "e000000b"}
    )
    html = response.content.decode()
    row = html.split('id="n-e000000b"')[0].rsplit("<div", 1)[1]
    assert "selected" in row and "on-path" in row
    # the entry pane is rendered for the target
    assert 'data-entry="e000000b"' in html
    assert "approach a" in html  # code block content


def test_large_session_folds_runs_and_branches(owner, client_for, workspace):
    s = bulk_session(owner, str(workspace), 1000, 3)
    assert Entry.objects.filter(session=s, pi_id="b000000000").exists()
    c = client_for(owner)
    html = c.get(url("tree_panel", s)).content.decode()
    assert html.count('class="tn node') < 60
    assert "entries folded" in html
    assert "more entries in this branch" in html
    # lazily expand the fold and the side branch
    import re

    fold = re.search(r'hx-get="([^"]*/tree/run/[^"]*)"', html).group(1).replace("&amp;", "&")
    run_html = c.get(fold).content.decode()
    assert run_html.count('class="tn node') > 20
    more = re.search(r'hx-get="([^"]*/tree/branch/[^"]*)"', html).group(1).replace("&amp;", "&")
    branch_html = c.get(more).content.decode()
    assert "n-b0000000a5" in branch_html and "tree/run/" in branch_html


def test_entry_pane_renders_safely(session, owner, client_for):
    c = client_for(owner)
    html = c.get(url("entry_pane", session, "e0000004")).content.decode()
    assert 'href="javascript:' not in html.replace("'", '"')
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    html = c.get(url("entry_pane", session, "e0000013")).content.decode()
    assert "onerror" not in html.replace("&quot;", '"').split("<pre")[0]  # nothing live
    assert '<img src="x"' not in html
    assert "Output truncated by lines" in html
    html = c.get(url("entry_pane", session, "e0000001")).content.decode()
    assert 'src="data:image/png;base64,' in html
    assert "image/svg+xml not shown" in html
    html = c.get(url("entry_pane", session, "e00000c1")).content.decode()
    assert "Compaction summary" in html and "src/b.py" in html
    html = c.get(url("entry_pane", session, "e000000c")).content.decode()
    assert 'class="ansi34"' in html and "&lt;b&gt;not bold&lt;/b&gt;" in html


def test_full_output_view_refuses_outside_paths(owner, client_for, workspace, settings, tmp_path):
    from sessions_app.selectors.workspaces import artifact_dir

    # Only files in the session's own artifact directory are served (not workspace files).
    in_workspace = workspace / "out.log"
    in_workspace.write_text("a workspace file\n")
    s = import_branched(owner, str(workspace), str(in_workspace), session_id=str(uuid.uuid4()))
    c = client_for(owner)
    assert c.get(url("entry_output", s, "e0000013")).status_code == 404
    inside = Path(artifact_dir(s)) / "bash-0123.log"
    inside.parent.mkdir(parents=True, exist_ok=True)
    inside.write_text("the full output\n")
    set_full_output_path(s, inside)
    response = c.get(url("entry_output", s, "e0000013"))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"the full output\n"
    assert response["Content-Type"].startswith("text/plain")
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    s2 = import_branched(owner, str(workspace), str(outside), session_id=str(uuid.uuid4()))
    assert c.get(url("entry_output", s2, "e0000013")).status_code == 404
    s3 = import_branched(
        owner,
        str(workspace),
        str(workspace / ".." / ".." / "etc" / "passwd"),
        session_id=str(uuid.uuid4()),
    )
    assert c.get(url("entry_output", s3, "e0000013")).status_code == 404


# --- actions -------------------------------------------------------------------------


def test_continue_here_on_user_message_prefills_and_is_idempotent(session, owner, client_for):
    c = client_for(owner, csrf=False)
    response = c.post(url("entry_navigate", session, "e000000d"))
    assert response.status_code == 200
    triggers = json.loads(response["HX-Trigger"])
    assert triggers["piweb:prefill-input"] == {"text": "A looks wrong"}
    session.refresh_from_db()
    assert session.leaf.pi_id == "e000000c"  # parent of the user message
    before = Activity.objects.filter(session=session, verb="navigated").count()
    again = c.post(url("entry_navigate", session, "e000000d"))
    assert again.status_code == 200 and "Already here" in again.content.decode()
    assert Activity.objects.filter(session=session, verb="navigated").count() == before
    # assistant target: the leaf moves onto it, nothing to prefill
    response = c.post(url("entry_navigate", session, "e0000016"))
    assert "piweb:prefill-input" not in json.loads(response["HX-Trigger"])
    session.refresh_from_db()
    assert session.leaf.pi_id == "e0000016"


def test_label_and_remove_label(session, owner, client_for):
    c = client_for(owner)
    count = Entry.objects.filter(session=session).count()
    assert c.post(url("entry_label", session, "e0000011"), {"label": "works"}).status_code == 200
    assert Entry.objects.get(session=session, pi_id="e0000011").label == "works"
    # same label twice (double click): no second label entry
    c.post(url("entry_label", session, "e0000011"), {"label": "works"})
    assert Entry.objects.filter(session=session).count() == count + 1
    c.post(url("entry_label", session, "e0000011"), {"label": "works", "remove": "1"})
    assert Entry.objects.get(session=session, pi_id="e0000011").label == ""
    assert Entry.objects.filter(session=session, type="label").count() == 3


def test_inspector_shows_context_after_compaction(session, owner, client_for):
    html = client_for(owner).get(url("inspector", session), {"leaf": "e0000014"}).content.decode()
    assert "compacted into the following summary" in html
    # entries before firstKeptEntryId are hidden behind the summary
    assert "4 entries hidden behind the compaction summary" in html
    assert 'class="ctx-threshold" style="left: 87.20%"' in html  # (128000-16384)/128000
    assert "Current working directory" in html
    # at the branch summary's branch, the summary is a user message with the framing
    html = client_for(owner).get(url("inspector", session), {"leaf": "e0000016"}).content.decode()
    assert "summary of a branch that this conversation came back from" in html


# --- rights and CSRF -----------------------------------------------------------------


TREE_CALLS = [
    Call("tree_panel"),
    Call("tree_branch", args=("e0000004",)),
    Call("entry_pane", args=("e0000004",)),
    Call("entry_text", args=("e0000004",)),
    Call("entry_raw", args=("e0000004",)),
    Call("entry_output", args=("e0000013",)),
    Call("inspector"),
    post("entry_navigate", args=("e0000004",)),
    post("entry_label", {"label": "x"}, args=("e0000004",)),
    post("entry_fork", {"scope": "path"}, args=("e0000004",)),
]


def test_it_requires_login(session):
    entries, sessions = session.entries.count(), Session.objects.count()
    assert login_redirects(TREE_CALLS, session) == each(TREE_CALLS, "/login/")
    assert (session.entries.count(), Session.objects.count()) == (entries, sessions)


@pytest.mark.embedded
def test_it_requires_a_share_of_the_session(session, make_user, client_for):
    c = client_for(make_user("stranger"))
    for response in (
        c.get(url("session_detail", session)),
        c.get(url("tree_panel", session)),
        c.get(url("entry_pane", session, "e0000004")),
        c.get(url("inspector", session)),
        c.post(url("entry_navigate", session, "e0000004")),
        c.post(url("entry_label", session, "e0000004"), {"label": "x"}),
        c.post(url("entry_fork", session, "e0000004"), {"scope": "path"}),
        c.post(url("jobs_compact", session)),
    ):
        assert response.status_code == 404


@pytest.mark.embedded
def test_it_requires_editor_rights_to_change_the_tree(session, make_user, client_for):
    viewer = make_user("viewer")
    share(session, viewer, SessionShare.Role.VIEWER)
    c = client_for(viewer)
    page = c.get(url("session_detail", session))
    assert page.status_code == 200
    entry = c.get(url("entry_pane", session, "e0000004")).content.decode()
    assert "read-only access" in entry and "Continue here" not in entry
    leaf = Session.objects.get(pk=session.pk).leaf_id
    for response in (
        c.post(url("entry_navigate", session, "e0000004")),
        c.post(url("entry_label", session, "e0000004"), {"label": "x"}),
        c.post(url("entry_fork", session, "e0000004"), {"scope": "path"}),
        c.post(url("jobs_compact", session)),
    ):
        assert response.status_code == 403
    assert Session.objects.get(pk=session.pk).leaf_id == leaf


def test_editor_may_navigate(session, make_user, client_for):
    editor = make_user("editor")
    share(session, editor, SessionShare.Role.EDITOR)
    assert client_for(editor).post(url("entry_navigate", session, "e0000004")).status_code == 200


def test_it_requires_a_csrf_token_on_actions(session, owner, client_for):
    c = client_for(owner, csrf=True)
    assert c.post(url("entry_navigate", session, "e0000004")).status_code == 403
    assert c.post(url("entry_label", session, "e0000004"), {"label": "x"}).status_code == 403
    page = c.get(url("session_detail", session))
    token = page.cookies["csrftoken"].value
    ok = c.post(url("entry_navigate", session, "e0000004"), HTTP_X_CSRFTOKEN=token)
    assert ok.status_code == 200


def test_fork_scopes(session, owner, client_for):
    c = client_for(owner)
    made = []
    for scope in ("path", "path_and_siblings", "up_to_depth"):
        response = c.post(url("entry_fork", session, "e000000d"), {"scope": scope})
        assert response.status_code == 200, response.content
        new_pi = response["HX-Redirect"].rstrip("/").rsplit("/", 1)[1]
        made.append(Session.objects.get(pi_id=new_pi))
    assert all(s.parent_id == session.pk for s in made)
    path_ids = set(made[0].entries.exclude(type="label").values_list("pi_id", flat=True))
    assert {
        "e0000001",
        "e0000002",
        "e0000003",
        "e0000004",
        "e000000a",
        "e000000b",
        "e000000c",
        "e000000d",
    } <= path_ids
    assert "e0000010" not in path_ids
    sib_ids = set(made[1].entries.exclude(type="label").values_list("pi_id", flat=True))
    assert path_ids <= sib_ids
    assert "e0000010" in sib_ids and "e0000b51" in sib_ids  # sibling branches of e000000a
    depth_ids = set(made[2].entries.exclude(type="label").values_list("pi_id", flat=True))
    assert path_ids <= depth_ids
    assert c.post(url("entry_fork", session, "e000000d"), {"scope": "bogus"}).status_code == 400


def test_summary_request_from_a_stale_page_changes_nothing(session, owner, client_for):
    """A page drawn before the leaf moved (another tab) must not summarize the wrong branch."""
    c = client_for(owner)
    leaf = Session.objects.get(pk=session.pk).leaf_id
    response = c.post(
        url("entry_navigate", session, "e0000016"),
        {"summary": "1", "old_leaf": "e000000e"},  # not the session's leaf any more
    )
    assert response.status_code == 409
    assert "moved on since this page was drawn" in response.content.decode()
    assert Session.objects.get(pk=session.pk).leaf_id == leaf
    # from HTMX too the refusal keeps its real status (htmx is configured to swap 4xx):
    # the notice partial, and a client event that redraws the tree
    htmx = c.post(
        url("entry_navigate", session, "e0000016"),
        {"summary": "1", "old_leaf": "e000000e"},
        HTTP_HX_REQUEST="true",
    )
    assert htmx.status_code == 409 and "X-Piweb-Status" not in htmx
    assert 'class="notice notice-error"' in htmx.content.decode()
    assert "piweb:tree-refresh" in json.loads(htmx["HX-Trigger"])
    from sessions_app.models import Job

    assert not Job.objects.filter(session=session).exists()


def test_inspector_lists_project_context_and_skills(owner, client_for, workspace):
    write_project_context(workspace, "Ship the app safely.")
    s = import_branched(owner, str(workspace), session_id=str(uuid.uuid4()))
    html = client_for(owner).get(url("inspector", s), {"leaf": "e0000004"}).content.decode()
    assert str(workspace / "AGENTS.md") in html
    assert "Always run the tests." in html
    assert "deploy" in html and "Ship the app safely." in html
    # no compaction on this path: nothing hidden, messages are the path's messages
    assert "hidden behind the compaction summary" not in html
    assert html.count('class="ctx-msg ') == 4


@pytest.mark.usefixtures("fresh_workspace_root")
def test_full_output_of_a_path_into_another_users_area_is_refused(make_user, settings, client_for):
    victim, attacker = make_user(), make_user()
    secret = area_of(settings, victim) / "proj" / ".env"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("API_KEY=victim-secret\n")
    s = import_branched(attacker, "/tmp/anything", str(secret), session_id=str(uuid.uuid4()))
    c = client_for(attacker)
    response = c.get(reverse("sessions_app:entry_output", args=[s.pi_id, "e0000013"]))
    assert response.status_code == 404
    # ...and the page does not offer the link for it.
    pane = c.get(reverse("sessions_app:entry_pane", args=[s.pi_id, "e0000013"]))
    assert pane.status_code == 200
    assert "/output/" not in pane.content.decode()
    # A file in the global artifact dir but not this session's is refused too.
    other = Path(settings.PIWEB_ARTIFACT_DIR) / "sessions" / "999999999" / "bash-x.log"
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_text("someone else's output")
    set_full_output_path(s, other)
    response = c.get(reverse("sessions_app:entry_output", args=[s.pi_id, "e0000013"]))
    assert response.status_code == 404


def test_fold_urls_survive_ids_containing_the_old_placeholders(make_user, client_for):
    owner = make_user()
    sid = "FIRST-LAST-HEAD-" + uuid.uuid4().hex[:8]
    entries, parent = [], None
    for i in range(400):
        eid = f"LAST{i:04d}HEADFIRST"
        entries.append(message(eid, parent, "user" if i % 2 == 0 else "assistant", ts=i))
        parent = eid
    # a side branch so a "more in this branch" row can appear too
    for j in range(60):
        eid = f"HEADb{j:03d}"
        entries.append(message(eid, "LAST0010HEADFIRST" if j == 0 else f"HEADb{j - 1:03d}", ts=j))
    import_jsonl_stream(as_file(jsonl_text(header(sid), entries)), owner, filename="f.jsonl")
    html = client_for(owner).get(reverse("sessions_app:session_detail", args=[sid])).content
    urls = re.findall(r'hx-get="([^"?]*/tree/(?:run|branch)/[^"?]*)', html.decode())
    assert urls, "expected folded rows in a 460-entry session"
    known = set(Entry.objects.filter(session__pi_id=sid).values_list("pi_id", flat=True))
    for url in urls:
        match = resolve(url.replace("&amp;", "&"))
        assert match.kwargs["session_id"] == sid
        for key in ("first_id", "last_id", "head_id"):
            if key in match.kwargs:
                assert match.kwargs[key] in known, url


# --- pi 1.x entries: tree rows and the inspector page -------------------------------------


@pytest.fixture
def pi1_owner(make_user):
    return make_user("pi1-owner")


@pytest.fixture
def pi1_session(pi1_owner):
    return import_pi1_session(pi1_owner)


@pytest.mark.embedded
def test_tree_rows_name_each_new_type(pi1_session, pi1_owner):
    url = reverse("sessions_app:session_detail", args=[pi1_session.pi_id])
    # As in pi 1.6.0's tree, the default filter leaves usage and context edits out.
    html = client_for(pi1_owner).get(url).content.decode()
    assert 'id="n-b00000s1"' in html and 'id="n-b00000x1"' in html
    assert 'id="n-b00000u1"' not in html and 'id="n-b00000e2"' not in html
    html = client_for(pi1_owner).get(url + "?filter=all").content.decode()

    def row(entry_id):
        start = html.index(f'id="n-{entry_id}"')
        return html[html.rindex("<div", 0, start) : html.index("</div>", start)]

    assert "k-usage" in row("b00000u1") and "<b>usage</b>" in row("b00000u1")
    assert "k-context_edit" in row("b00000e2") and "<b>context edit</b>" in row("b00000e2")
    assert "drops b0000001" in row("b00000e2")
    assert "k-system" in row("b00000s1") and "<b>system</b>" in row("b00000s1")
    assert "k-hologram" in row("b00000x1") and "<b>hologram</b>" in row("b00000x1")


@pytest.mark.embedded
def test_inspector_page_shows_edits_and_system_changes(pi1_session, pi1_owner):
    url = reverse("sessions_app:inspector", args=[pi1_session.pi_id]) + "?leaf=b0000004"
    html = client_for(pi1_owner).get(url).content.decode()
    assert "3 context edits on this path" in html
    assert "overridden by a later edit" in html
    assert 'class="ctx-edit edit-dropped"' in html and "Find the flaky test" in html
    assert "section rules" in html and "&lt;rules&gt;Always run the quokka linter" in html
    assert "<code>+lint</code>" in html and "<code>-grep</code>" in html


def test_tree_rows_read_tool_calls_by_headline_and_label_their_numbers(owner, client_for, session):
    """Issue 34: a tool result's row says what its call did (`$ make test`, the chat's
    headline), never the call id; the numbers on a row say what they count; a side
    branch's head carries how many entries folding it hides."""
    c = client_for(owner)
    html = c.get(url("tree_panel", session) + "?filter=all").content.decode()
    row = re.search(r'<div class="[^"]*" id="n-e0000013".*?</div>', html, re.S).group(0)
    assert '<b class="headline">$ make test</b>' in row
    assert "call_b1" not in html
    call = re.search(r'<div class="[^"]*" id="n-e0000012".*?</div>', html, re.S).group(0)
    assert '<code class="headline">$ make test</code>' in call
    assert re.search(r'class="tok" title="[^"]+ tokens \(estimate\)"', row)
    assert re.search(r'class="badge fork" title="Branch point: \d+ branches leave', html)
    assert re.search(r'class="fold-count">\d+ entr(y|ies) folded<', html)


def test_archiving_a_branch_folds_it_shows_it_again_and_keeps_it_in_exports(
    session, owner, client_for
):
    from sessions_app.models import ArchivedBranch
    from sessions_app.selectors.exporter import export_jsonl

    c = client_for(owner)
    before = export_jsonl(session)
    assert 'id="n-e000000b"' in c.get(url("tree_panel", session)).content.decode()
    pane = c.get(url("session_detail", session), {"target": "e000000a"}).content.decode()
    assert "Archive this branch" in pane
    response = c.post(url("entry_archive", session, "e000000a"), {"archive": "1"})
    assert response.status_code == 200 and b"Branch archived" in response.content
    c.post(url("entry_archive", session, "e000000a"), {"archive": "1"})  # idempotent
    assert ArchivedBranch.objects.filter(session=session).count() == 1
    html = c.get(url("tree_panel", session)).content.decode()
    head = html.split('id="n-e000000a"')[0].rsplit("<div", 1)[1]
    assert "archived" in head and 'id="n-e000000b"' not in html  # folded away
    assert export_jsonl(session) == before  # still in exports, unchanged
    pane = c.get(url("session_detail", session), {"target": "e000000a"}).content.decode()
    assert "Show archived branch again" in pane
    c.post(url("entry_archive", session, "e000000a"), {"archive": "0"})
    assert not ArchivedBranch.objects.filter(session=session).exists()
    assert 'id="n-e000000b"' in c.get(url("tree_panel", session)).content.decode()
    assert c.post(url("entry_archive", session, "nope1234"), {"archive": "1"}).status_code == 404


@pytest.mark.django_db(transaction=True)  # committed rows: the tree index is cached
def test_entry_pane_query_count_is_bounded(session, owner, client_for):
    """A node click's request: its queries do not grow with the path or the session, and
    a second click on the same session version reuses what every entry shares."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    c = client_for(owner)
    c.get(url("entry_pane", session, "e0000004"))  # warms the session's caches
    for entry_id in ("e0000013", "e00000c1", "e0000001"):
        with CaptureQueriesContext(connection) as queries:
            response = c.get(url("entry_pane", session, entry_id))
        assert response.status_code == 200
        # login session, user, session row, the entry, (a tool result's call), the
        # blocking job, snapshots, archived heads, the theme: no path or children query
        sql = " ".join(q["sql"] for q in queries.captured_queries)
        assert "RECURSIVE" not in sql
        assert len(queries) <= (9 if entry_id == "e0000013" else 8)
