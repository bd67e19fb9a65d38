"""The file-changes views: a node's diff (escaped, coloured), the branch view, compare,
the chat card, the tree row counts, restore and undo, and their rights."""

import pytest
from django.urls import reverse

from sessions_app.models import FileSnapshot
from sessions_app.services import chat, jobs, sessions
from tests.support.web import client_for, share

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tasks_stay_in_process", "own_snapshot_dir"),
]


@pytest.fixture
def owner(make_user):
    return make_user()


@pytest.fixture
def session(owner, workspace, redis_ready):
    return sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")


def run(session, owner, text_):
    job = chat.send_message(session, owner, text_)
    assert jobs.run_job(str(job.pk)) == "done"
    session.refresh_from_db()
    return session.leaf_pi_id


def url(name, session, *args):
    return reverse(f"sessions_app:{name}", args=[session.pi_id, *args])


def test_a_nodes_diff_is_coloured_and_escaped(session, owner, workspace):
    (workspace / "page.py").write_text("x = 1\n")
    node = run(session, owner, "!printf 'y = \"<script>alert(1)</script>\"\\n' >> page.py")
    html = client_for(owner).get(url("changes_entry", session, node)).content.decode()
    assert 'data-path="page.py"' in html and 'data-status="modified"' in html
    assert '<tr class="add">' in html and "hl-" in html  # Pygments classes
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert "Restore files to this node" in html
    # The tree row shows +1 −0, the chat a card under the command.
    tree_html = client_for(owner).get(url("tree_panel", session)).content.decode()
    assert 'class="tree-chg"' in tree_html and "+1</span>" in tree_html
    chat_html = client_for(owner).get(url("chat_transcript", session)).content.decode()
    assert 'class="changes-card"' in chat_html and "1 file changed" in chat_html


def test_branch_and_compare_views(session, owner, workspace):
    (workspace / "f.txt").write_text("base\n")
    start = run(session, owner, "!true")
    a = run(session, owner, "!echo left > f.txt")
    sessions.set_leaf(session, start)
    (workspace / "f.txt").write_text("base\n")
    b = run(session, owner, "!echo right > f.txt")
    client = client_for(owner)
    branch = client.get(url("changes_branch", session, a)).content.decode()
    assert f"<code>{start}</code>" in branch and "+left" in branch
    html = client.get(url("changes_compare", session) + f"?a={a}&b={b}").content.decode()
    assert 'data-side="A"' in html and 'data-side="B"' in html
    assert "+left" in html and "+right" in html
    page = client.get(url("compare", session) + f"?a={a}&b={b}").content.decode()
    assert url("changes_compare", session) in page


def test_restore_and_undo_through_the_views(session, owner, make_user, workspace):
    (workspace / "f.txt").write_text("one\n")
    first = run(session, owner, "!echo two > f.txt")
    run(session, owner, "!echo three > f.txt")
    viewer = make_user()
    share(session, viewer, "viewer")
    refused = client_for(viewer).post(url("changes_restore", session, first), HTTP_HX_REQUEST="1")
    assert refused.status_code == 403
    assert (workspace / "f.txt").read_text() == "three\n"

    done = client_for(owner).post(url("changes_restore", session, first), HTTP_HX_REQUEST="1")
    assert done.status_code == 200 and (workspace / "f.txt").read_text() == "two\n"
    session.refresh_from_db()
    rewind = session.leaf_pi_id
    assert FileSnapshot.objects.get(entry__pi_id=rewind).kind == "rewind"
    pane = client_for(owner).get(url("changes_entry", session, rewind)).content.decode()
    assert "Undo this restore" in pane
    undo = client_for(owner).post(url("changes_undo", session, rewind), HTTP_HX_REQUEST="1")
    assert undo.status_code == 200 and (workspace / "f.txt").read_text() == "three\n"


def test_continue_here_can_restore_the_files(session, owner, workspace):
    (workspace / "f.txt").write_text("one\n")
    first = run(session, owner, "!echo two > f.txt")
    run(session, owner, "!echo three > f.txt")
    response = client_for(owner).post(
        url("entry_navigate", session, first), {"restore_files": "1"}, HTTP_HX_REQUEST="1"
    )
    assert response.status_code == 200 and b"files are back" in response.content
    assert (workspace / "f.txt").read_text() == "two\n"
    session.refresh_from_db()
    assert session.leaf.parent.pi_id == first  # the rewind entry, under the node


def test_the_html_export_and_the_share_page_include_the_diffs(session, owner, workspace, settings):
    from django.test import Client

    from sessions_app.presentation import exports
    from sessions_app.services import sharing

    (workspace / "f.txt").write_text("one\n")
    run(session, owner, "!echo two-marker >> f.txt")
    html = exports.export_html(session)
    assert 'data-path="f.txt"' in html and "+two-marker" in html
    link = sharing.create_link(session, actor=owner, leaf_pi_id=session.leaf_pi_id)
    page = Client().get(reverse("sessions_app:share_link", args=[link.token])).content.decode()
    assert 'data-path="f.txt"' in page and "+two-marker" in page
    # Bounded: past the budget the diff text is cut.
    settings.PIWEB_DIFF_MAX_TOTAL_BYTES = 40
    cut = exports.export_html(session)
    assert "This diff is cut." in cut and "+two-marker" not in cut
