"""What the agent changed: workspace snapshots per node, branches, compare, rewind and
undo, ignored and outside files (the reconstructed changes of an imported session are
in test_changes_selectors.py).

Runs go through the real chat service in-process (the scripted model server speaking
the OpenAI wire, the real sandbox, real git), as in test_chat.py."""

import os
import subprocess

import pytest

from sessions_app.agent.snapshots import ShadowRepo
from sessions_app.models import Entry, FileSnapshot, Job
from sessions_app.selectors import changes as changes_selectors
from sessions_app.selectors import paths
from sessions_app.services import changes, sandboxing, sessions
from tests.support.agent_runs import run_here as run
from tests.support.scripted_llm import text, tool_call, tool_calls

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


def assistants_with_calls(session):
    path = paths.load_path(session)
    return [
        e
        for e in path
        if e["type"] == "message"
        and e["message"]["role"] == "assistant"
        and any(b.get("type") == "toolCall" for b in e["message"]["content"])
    ]


def paths_of(change_set):
    return {f.path: f for f in change_set.files}


def test_each_change_of_a_turn_appears_at_its_node(session, owner, llm, workspace):
    (workspace / "a.txt").write_text("one\ntwo\nthree\n")
    (workspace / "c.txt").write_text("x = 1\n")
    (workspace / "d.txt").write_text("gone soon\n")
    llm.push(
        tool_calls(
            [
                ("edit", {"path": "a.txt", "oldText": "two", "newText": "TWO"}),
                ("write", {"path": "b.txt", "content": "new file\n"}),
            ]
        ),
        tool_call("bash", {"command": "sed -i 's/x = 1/x = 2/' c.txt"}),
        tool_call("bash", {"command": "rm d.txt"}),
        text("Done."),
    )
    run(session, owner, "change things")
    first, second, third = assistants_with_calls(session)

    one = changes_selectors.entry_changes(session, first["id"])
    assert one.source == "snapshot"
    assert set(paths_of(one)) == {"a.txt", "b.txt"}
    assert paths_of(one)["a.txt"].status == "modified"
    assert "-two\n+TWO\n" in paths_of(one)["a.txt"].diff
    assert paths_of(one)["b.txt"].status == "added" and paths_of(one)["b.txt"].added == 1

    two = changes_selectors.entry_changes(session, second["id"])
    assert set(paths_of(two)) == {"c.txt"}
    assert "-x = 1\n+x = 2\n" in two.files[0].diff

    three = changes_selectors.entry_changes(session, third["id"])
    assert [(f.path, f.status, f.removed) for f in three.files] == [("d.txt", "deleted", 1)]

    # The tree rows' counts, and the branch view of everything from the root.
    counts = changes_selectors.change_counts(session)
    assert counts[first["id"]] == {"files": 2, "added": 2, "removed": 1, "kind": "turn"}
    whole = changes_selectors.branch_changes(session, session.leaf_pi_id)
    assert set(paths_of(whole)) == {"a.txt", "b.txt", "c.txt", "d.txt"}

    # A user's !cmd is a node with its own snapshot.
    run(session, owner, "!echo more >> a.txt")
    bash_entry = session.leaf_pi_id
    cmd = changes_selectors.entry_changes(session, bash_entry)
    assert [(f.path, f.added) for f in cmd.files] == [("a.txt", 1)]
    assert FileSnapshot.objects.get(entry__pi_id=bash_entry).kind == "bash"


def test_two_branches_changing_one_file_are_compared(session, owner, llm, workspace):
    (workspace / "app.py").write_text("print('hello')\n")
    root = sessions.append_entry(session, {"type": "session_info", "name": "start"})
    llm.push(
        tool_call("edit", {"path": "app.py", "oldText": "hello", "newText": "left"}),
        text("left done"),
    )
    run(session, owner, "go left")
    left_leaf = session.leaf_pi_id
    # Back to the branch point, files too, then the other way.
    (workspace / "app.py").write_text("print('hello')\n")
    sessions.set_leaf(session, root.pi_id)
    llm.push(
        tool_call("edit", {"path": "app.py", "oldText": "hello", "newText": "right"}),
        text("right done"),
    )
    run(session, owner, "go right")
    right_leaf = session.leaf_pi_id

    result = changes_selectors.compare_changes(session, left_leaf, right_leaf)
    assert result["ancestor"] == root.pi_id
    left, right = paths_of(result["a"])["app.py"], paths_of(result["b"])["app.py"]
    assert "+print('left')" in left.diff and "+print('right')" not in left.diff
    assert "+print('right')" in right.diff and "-print('hello')" in right.diff
    # Each branch from its branch point.
    assert (
        "+print('left')"
        in paths_of(changes_selectors.branch_changes(session, left_leaf))["app.py"].diff
    )


def test_rewind_and_undo_with_binary_deleted_and_renamed_files(session, owner, workspace):
    (workspace / "keep.txt").write_text("v1\n")
    (workspace / "logo.bin").write_bytes(bytes(range(256)) * 4)
    (workspace / "old_name.txt").write_text("renamed later\n")
    run(session, owner, "!echo v2 > keep.txt")
    node = session.leaf_pi_id
    run(
        session,
        owner,
        "!printf '\\x00\\xff' > logo.bin && mv old_name.txt new_name.txt && rm keep.txt",
    )
    later = changes_selectors.entry_changes(session, session.leaf_pi_id)
    statuses = {f.path: (f.status, f.binary) for f in later.files}
    assert statuses["logo.bin"] == ("modified", True)
    assert statuses["new_name.txt"][0] == "renamed"
    assert statuses["keep.txt"][0] == "deleted"

    rewind = changes.restore_files(session, owner, node)
    assert rewind.payload["customType"] == changes.REWIND_TYPE
    assert session.leaf_pi_id == rewind.pi_id  # the history shows it
    assert (workspace / "keep.txt").read_text() == "v2\n"
    assert (workspace / "logo.bin").read_bytes() == bytes(range(256)) * 4
    assert (workspace / "old_name.txt").read_text() == "renamed later\n"
    assert not (workspace / "new_name.txt").exists()
    # Restored files stay the commands' to change (a root worker's commands are not root).
    outcome = sandboxing.run_command(session, "echo v3 >> keep.txt && rm old_name.txt")
    assert outcome.exit_code == 0, outcome.result.truncation.content
    (workspace / "old_name.txt").write_text("renamed later\n")

    changes.undo_restore(session, owner, rewind.pi_id)
    assert not (workspace / "keep.txt").exists()
    assert (workspace / "logo.bin").read_bytes() == b"\x00\xff"
    assert (workspace / "new_name.txt").read_text() == "renamed later\n"
    assert not (workspace / "old_name.txt").exists()


def test_restore_refuses_while_a_run_is_active(session, owner, workspace):
    (workspace / "f.txt").write_text("1\n")
    run(session, owner, "!echo 2 > f.txt")
    Job.objects.create(session=session, kind="agent_run", status="running")
    with pytest.raises(changes.RestoreError, match="is active in this folder"):
        changes.restore_files(session, owner, session.leaf_pi_id)


@pytest.mark.parametrize("where", ["the same folder", "a folder inside it", "its parent"])
def test_restore_refuses_while_another_sessions_command_runs_in_an_overlapping_folder(
    session, owner, workspace, where
):
    """Issue #33, C: the swapping loop runs in a second session of the same folder."""
    (workspace / "f.txt").write_text("1\n")
    run(session, owner, "!echo 2 > f.txt")
    (workspace / "sub").mkdir()
    cwd = {"the same folder": workspace, "a folder inside it": workspace / "sub"}
    other_cwd = cwd.get(where, workspace.parent)
    other = sessions.create_session(owner=owner, cwd=str(other_cwd), model_profile="scripted")
    job = Job.objects.create(session=other, kind="agent_run", status="running")
    with pytest.raises(changes.RestoreError, match="another that shares it"):
        changes.restore_files(session, owner, session.leaf_pi_id)
    assert (workspace / "f.txt").read_text() == "2\n"
    job.status = "succeeded"
    job.save()
    changes.restore_files(session, owner, session.leaf_pi_id)  # once it ended


def test_a_run_in_a_sibling_folder_with_the_same_prefix_does_not_block_a_restore(
    session, owner, workspace
):
    (workspace / "f.txt").write_text("1\n")
    run(session, owner, "!echo 2 > f.txt")
    sibling = workspace.with_name(workspace.name + "2")  # ws-ab12 next to ws-ab1: not inside
    sibling.mkdir()
    other = sessions.create_session(owner=owner, cwd=str(sibling), model_profile="scripted")
    Job.objects.create(session=other, kind="agent_run", status="running")
    changes.restore_files(session, owner, session.leaf_pi_id)


def test_ignored_folders_large_files_and_links_out_are_never_read(
    session, owner, workspace, tmp_path, settings
):
    settings.PIWEB_SNAPSHOT_MAX_FILE_KB = 64
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "build").mkdir()
    with open(workspace / "build" / "huge.bin", "wb") as fh:  # 100 MB, sparse
        fh.truncate(100 * 1024 * 1024)
    (workspace / "build" / "ignored.txt").write_text("IGNORED-CONTENT\n")
    (workspace / "etc").symlink_to("/etc")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE-SECRET\n")
    os.mkfifo(outside / "trap")  # opening it to read would hang the snapshot
    (workspace / "out").symlink_to(outside)
    (workspace / "big.dat").write_bytes(b"B" * (65 * 1024))
    (workspace / "src.py").write_text("ok = True\n")
    run(session, owner, "!echo changed >> src.py")

    snap = FileSnapshot.objects.get(entry__pi_id=session.leaf_pi_id)
    repo = changes_selectors.repo_for(session)
    assert sorted(repo.files(snap.commit)) == [".gitignore", "etc", "out", "src.py"]
    blobs = repo.git("cat-file", "--batch-all-objects", "--batch")
    for marker in (b"IGNORED-CONTENT", b"OUTSIDE-SECRET", b"BBBBBBBB"):
        assert marker not in blobs
    assert b"root:" not in blobs  # nothing of /etc/passwd
    assert repo.size_bytes() < 2 * 1024 * 1024
    assert (workspace / "build" / "huge.bin").stat().st_size == 100 * 1024 * 1024


def test_the_users_own_git_repository_is_left_alone(session, owner, workspace):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    head = (workspace / ".git" / "HEAD").read_bytes()
    listing = sorted(os.listdir(workspace / ".git"))
    (workspace / "main.c").write_text("int main;\n")
    run(session, owner, "!echo '// more' >> main.c")
    repo = changes_selectors.repo_for(session)
    assert isinstance(repo, ShadowRepo) and str(workspace) not in repo.git_dir
    snap = FileSnapshot.objects.get(entry__pi_id=session.leaf_pi_id)
    assert not any(p.startswith(".git/") for p in repo.files(snap.commit))
    assert (workspace / ".git" / "HEAD").read_bytes() == head
    assert sorted(os.listdir(workspace / ".git")) == listing


def test_a_fork_keeps_the_snapshots_of_its_copied_entries(session, owner, workspace):
    from sessions_app.services.fork import fork_session

    (workspace / "k.txt").write_text("1\n")
    run(session, owner, "!echo 2 >> k.txt")
    node = session.leaf_pi_id
    new = fork_session(session, node, "path", owner)
    copied = changes_selectors.entry_changes(new, node)
    assert [(f.path, f.added) for f in copied.files] == [("k.txt", 1)]
    assert "+2\n" in copied.files[0].diff


def test_a_snapshot_due_while_another_sessions_run_works_in_the_folder_is_skipped_and_says_why(
    session, owner, workspace, settings
):
    """Issue #33, D: another session's half-done work is not recorded as this one's."""
    from django.urls import reverse

    from tests.support.web import client_for

    settings.PIWEB_SNAPSHOT_WAIT_SECONDS = 1
    (workspace / "f.txt").write_text("1\n")
    run(session, owner, "!echo 2 > f.txt")
    first = FileSnapshot.objects.get(entry__pi_id=session.leaf_pi_id)
    other = sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")
    busy = Job.objects.create(session=other, kind="agent_run", status="running")
    run(session, owner, "!echo 3 > f.txt")

    skipped = FileSnapshot.objects.get(entry__pi_id=session.leaf_pi_id)
    assert skipped.commit == "" and "another session" in skipped.skipped
    assert changes_selectors.state_at(session, session.leaf_pi_id) == first
    html = (
        client_for(owner)
        .get(reverse("sessions_app:tree_panel", args=[session.pi_id]))
        .content.decode()
    )
    assert "no snapshot" in html and "another session was still" in html

    busy.status = "succeeded"
    busy.save()
    run(session, owner, "!echo 4 > f.txt")  # once it ended, snapshots are taken again
    last = FileSnapshot.objects.get(entry__pi_id=session.leaf_pi_id)
    assert last.commit and last.skipped == "" and [f["path"] for f in last.files] == ["f.txt"]


def test_over_quota_a_restore_is_refused_and_a_snapshot_skipped_saying_why(
    session, owner, workspace, settings
):
    """Issue #33, E: restores and snapshots write like commands, so they are checked too."""
    from django.utils import timezone

    from sessions_app.models import WorkspaceUsage

    (workspace / "f.txt").write_text("1\n")
    run(session, owner, "!echo 2 > f.txt")
    target = session.leaf_pi_id
    run(session, owner, "!echo 3 > f.txt")
    settings.PIWEB_WORKSPACE_QUOTA_MB = 5
    WorkspaceUsage.objects.update_or_create(
        user=owner, defaults={"bytes": 50 << 20, "measured_at": timezone.now()}
    )
    with pytest.raises(changes.RestoreError, match="over your quota") as refused:
        changes.restore_files(session, owner, target)
    assert refused.value.status == 507 and (workspace / "f.txt").read_text() == "3\n"
    last = Entry.objects.get(session=session, pi_id=session.leaf_pi_id)
    changes.record(session, last, None, FileSnapshot.Kind.BASH)  # the snapshot after it
    row = FileSnapshot.objects.filter(entry=last).order_by("-pk").first()
    assert row.commit == "" and "over your quota" in row.skipped
