"""Alternatives (issue 36): the workspace copy each variant runs in, restored from the
node's snapshot (real sandbox, real git), or a copy of the current folder when the node
has none; removed again only beneath the user's alternatives folder."""

import os

import pytest

from sessions_app.models import FileSnapshot
from sessions_app.selectors import workspaces
from sessions_app.services import alternatives, sessions
from tests.support.agent_runs import run_here

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tasks_stay_in_process"),
]


@pytest.fixture
def owner(make_user):
    return make_user()


@pytest.fixture
def session(owner, workspace, redis_ready):
    return sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")


def _files(folder) -> dict[str, str]:
    out = {}
    for base, _dirs, names in os.walk(folder):
        for name in names:
            path = os.path.join(base, name)
            out[os.path.relpath(path, folder)] = open(path).read()
    return out


@pytest.mark.usefixtures("own_snapshot_dir")
def test_each_variant_gets_the_nodes_files_whatever_came_after(session, owner, workspace):
    (workspace / "keep.txt").write_text("kept\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "deep.txt").write_text("deep\n")
    run_here(session, owner, "!printf 'at the node\\n' > a.txt")
    node = session.leaf_pi_id
    assert FileSnapshot.objects.filter(session=session, entry__pi_id=node).exists()
    run_here(session, owner, "!printf 'later\\n' > a.txt && rm keep.txt && echo x > b.txt")
    assert (workspace / "a.txt").read_text() == "later\n"

    made = [alternatives.make_variant_workspace(session, owner, node, i) for i in (1, 2)]
    assert [m.source for m in made] == ["snapshot", "snapshot"]
    assert made[0].path != made[1].path
    for m in made:
        assert _files(m.path) == {
            "a.txt": "at the node\n",
            "keep.txt": "kept\n",
            os.path.join("sub", "deep.txt"): "deep\n",
        }
        # a folder of the owner's that a session may work in (and the quota measures)
        assert workspaces.check_session_cwd(m.path, owner.pk) == os.path.realpath(m.path)
    # The session's own folder is untouched, and so is its repository's index.
    assert (workspace / "a.txt").read_text() == "later\n" and (workspace / "b.txt").exists()
    run_here(session, owner, "!true")
    assert (workspace / "a.txt").read_text() == "later\n"
    # Another try at the node gets folders of its own.
    again = alternatives.make_variant_workspace(session, owner, node, 1)
    assert again.path not in {m.path for m in made} and _files(again.path) == _files(made[0].path)
    # Removed when its branch goes; nothing outside the alternatives folder is.
    assert alternatives.remove_variant_workspace(owner, made[0].path)
    assert not os.path.exists(made[0].path) and os.path.isdir(made[1].path)
    assert not alternatives.remove_variant_workspace(owner, str(workspace))
    assert (workspace / "a.txt").exists()


def test_a_node_without_a_snapshot_gets_a_copy_of_the_current_folder(
    session, owner, workspace, settings
):
    settings.PIWEB_SNAPSHOTS = False
    (workspace / "a.txt").write_text("now\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "deep.txt").write_text("deep\n")
    node = sessions.append_entry(session, {"type": "session_info", "name": "imported"})
    made = alternatives.make_variant_workspace(session, owner, node.pi_id, 1)
    assert made.source == "copy" and made.commit == ""
    assert _files(made.path) == {"a.txt": "now\n", os.path.join("sub", "deep.txt"): "deep\n"}
    (workspace / "a.txt").write_text("changed\n")  # a copy, not a link
    assert _files(made.path)["a.txt"] == "now\n"


@pytest.mark.usefixtures("own_snapshot_dir")
def test_the_copies_go_when_their_branch_is_archived_or_the_session_deleted(
    session, owner, workspace
):
    from sessions_app.services import manage, navigation

    run_here(session, owner, "!printf 'x\\n' > a.txt")
    node = session.leaf_pi_id
    started = []
    for n in (1, 2):
        made = alternatives.make_variant_workspace(session, owner, node, n)
        started.append(
            alternatives._start_one(
                session, owner, node, n, alternatives.Variant(f"try {n}"), made, ""
            )
        )
    for s in started:  # (no worker here: the runs stay queued; they are not what is tested)
        s.job.status = "cancelled"
        s.job.save(update_fields=["status"])
    session.refresh_from_db()
    navigation.set_archived(session, started[0].head_pi_id, True, actor=owner)
    assert not os.path.exists(started[0].workspace.path)
    assert os.path.isdir(started[1].workspace.path)
    assert (workspace / "a.txt").exists()  # the session's own folder stays
    navigation.set_archived(session, started[0].head_pi_id, False, actor=owner)  # shown again
    manage.delete_session(session, actor=owner, confirm=session.pi_id)
    assert not os.path.exists(started[1].workspace.path) and (workspace / "a.txt").exists()
