"""Alternatives (issue 36): the workspace copy each variant runs in, restored from the
node's snapshot (real sandbox, real git), or a copy of the current folder when the node
has none; removed again only beneath the user's alternatives folder."""

import os

import pytest

from sessions_app.models import Entry, FileSnapshot
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


def _variant(session, owner, node, n, variant):
    """Variant `n` at `node` made and started here (its run job queued, not run)."""
    made = alternatives.make_variant_workspace(session, owner, node, n)
    return alternatives._start_one(session, owner, node, n, variant, made, "")


def _run(job):
    from sessions_app.services import jobs

    return jobs.run_job(str(job.pk))


@pytest.mark.usefixtures("own_snapshot_dir")
def test_a_tool_set_variant_offers_the_model_only_those_tools(session, owner, llm):
    """The run asks the scripted model with only the variant's tools (its request's
    `tools`), the system prompt names only them, a call of another tool is refused, and
    the comparison shows the tool set."""
    from sessions_app.selectors.alternatives import comparison
    from sessions_app.selectors.model_input import model_input
    from tests.support.scripted_llm import text, tool_call

    run_here(session, owner, "!printf 'x\\n' > a.txt")
    node = session.leaf_pi_id
    llm.reset()
    llm.push_for("look only", tool_call("bash", {"command": "echo hi > b.txt"}), text("Read."))
    llm.push_for("do anything", text("Did."))
    read_only = alternatives.parse_tools("read-only")
    assert read_only == ("read", "grep", "find", "ls")
    looker = _variant(session, owner, node, 1, alternatives.Variant("look only", tools=read_only))
    doer = _variant(session, owner, node, 2, alternatives.Variant("do anything"))
    assert _run(looker.job) == "done" and _run(doer.job) == "done"

    def offered(marker):
        return [
            sorted(t["function"]["name"] for t in r.get("tools") or [])
            for r in llm.requests
            if marker in str(r["messages"])
        ]

    assert offered("look only") == [sorted(read_only)] * 2  # (the refused call, then the answer)
    assert offered("do anything") == [["bash", "edit", "read", "write"]]
    assert not os.path.exists(os.path.join(looker.workspace.path, "b.txt"))  # bash refused
    session.refresh_from_db()
    prompt = model_input(session, looker.head_pi_id).system_prompt
    assert "\n- grep: " in prompt and "\n- bash: " not in prompt
    assert looker.workspace.path in prompt  # (the variant's own folder)
    # Recorded with the branch's workspace choice (the entry pi ignores), so a later run on
    # that branch ("Keep this one") keeps the tool set; the comparison shows it.
    head = Entry.objects.get(session=session, pi_id=looker.head_pi_id)
    assert head.payload["data"]["tools"] == list(read_only)
    one, two = comparison(session, [looker.job, doer.job])
    assert one["tools"] == list(read_only) and two["tools"] == []
    with pytest.raises(alternatives.AlternativeError, match="Unknown tool set"):
        alternatives.parse_tools("read,rm")


@pytest.mark.usefixtures("own_snapshot_dir")
def test_a_failed_variant_is_still_checked_and_a_stopped_one_is_not(session, owner, llm):
    """A provider's error: the check still runs in the variant's workspace, and its column
    shows the error and the check. A variant stopped before it ran: no check, and its
    column says so."""
    from sessions_app.selectors.alternatives import comparison
    from tests.support.scripted_llm import error

    run_here(session, owner, "!printf 'node\\n' > a.txt")
    node = session.leaf_pi_id
    llm.reset()
    llm.push_for("fails", error(400, "the provider refuses"))
    check = "cat a.txt"
    made = [alternatives.make_variant_workspace(session, owner, node, n) for n in (1, 2)]
    failing, stopped = (
        alternatives._start_one(session, owner, node, n, alternatives.Variant(m), w, check)
        for n, m, w in ((1, "fails", made[0]), (2, "stopped", made[1]))
    )
    alternatives.stop_all(session, owner, [stopped.job])
    assert _run(failing.job) == "error"
    one, two = comparison(session, [failing.job, stopped.job])
    assert one["status"] == "failed" and "the provider refuses" in one["answer"]
    assert "the provider refuses" in one["error"]
    assert one["check_exit"] == 0 and "node" in one["check"]["output"]  # in its own copy
    assert one["check_note"] == ""
    assert two["status"] == "cancelled" and two["check"] is None
    assert two["check_note"] == "stopped, no check"


@pytest.mark.usefixtures("own_snapshot_dir")
def test_a_variant_shown_again_gets_its_folder_back_as_its_branch_left_it(
    session, owner, workspace
):
    """Archiving removes the copy (the quota counts it); showing the branch again puts the
    same folder back with the files of the branch's newest snapshot (the variant's own,
    else the node's, from the repository of the folder it was taken in)."""
    from sessions_app.services import navigation

    run_here(session, owner, "!printf 'node\\n' > a.txt")
    node = session.leaf_pi_id
    worked, idle = (
        _variant(session, owner, node, n, alternatives.Variant(f"v{n}")) for n in (1, 2)
    )
    for s in (worked, idle):
        s.job.status = "cancelled"
        s.job.save(update_fields=["status"])
    # The first variant's branch did work in its folder: a command there, snapshotted.
    end = Entry.objects.filter(session=session, parent__pi_id=worked.head_pi_id)
    tip = end.get().pi_id
    sessions.set_leaf(session, tip, actor=owner)
    run_here(session, owner, "!printf 'variant\\n' > a.txt && echo new > b.txt")
    assert _files(worked.workspace.path) == {"a.txt": "variant\n", "b.txt": "new\n"}
    sessions.set_leaf(session, node, actor=owner)
    session.refresh_from_db()

    for s in (worked, idle):
        navigation.set_archived(session, s.head_pi_id, True, actor=owner)
        assert not os.path.exists(s.workspace.path)
    for s in (worked, idle):
        navigation.set_archived(session, s.head_pi_id, False, actor=owner)
    assert _files(worked.workspace.path) == {"a.txt": "variant\n", "b.txt": "new\n"}
    assert _files(idle.workspace.path) == {"a.txt": "node\n"}
    assert (workspace / "a.txt").read_text() == "node\n"  # the session's own folder
    # Shown again twice: nothing to do; the folder stays as it is.
    assert alternatives.restore_copy(session, worked.head_pi_id) is None


@pytest.mark.usefixtures("own_snapshot_dir")
def test_the_quota_counts_each_copy_and_not_the_removed_ones(session, owner, workspace, settings):
    """Each variant's copy is in the user's area: the measure counts it (and the quota then
    refuses a new copy); archiving and deleting remove the copies from the figure."""
    from sessions_app.services import manage, navigation
    from sessions_app.services.jobs.workspace_measure import measure_workspace

    (workspace / "big.bin").write_bytes(os.urandom(1 << 20))
    run_here(session, owner, "!true")
    node = session.leaf_pi_id
    before = measure_workspace(owner.pk).bytes
    started = [_variant(session, owner, node, n, alternatives.Variant(f"v{n}")) for n in (1, 2)]
    for s in started:
        s.job.status = "cancelled"
        s.job.save(update_fields=["status"])
        assert os.path.getsize(os.path.join(s.workspace.path, "big.bin")) == 1 << 20
    with_copies = measure_workspace(owner.pk).bytes
    assert with_copies >= before + 2 * (1 << 20)

    settings.PIWEB_WORKSPACE_QUOTA_MB = (with_copies - (1 << 19)) / (1 << 20)
    with pytest.raises(alternatives.AlternativeError, match="No workspace copy") as refused:
        alternatives.make_variant_workspace(session, owner, node, 3)
    assert refused.value.status == 507
    settings.PIWEB_WORKSPACE_QUOTA_MB = 0

    session.refresh_from_db()
    navigation.set_archived(session, started[0].head_pi_id, True, actor=owner)
    one_less = measure_workspace(owner.pk).bytes
    assert with_copies - one_less >= 1 << 20
    manage.delete_session(session, actor=owner, confirm=session.pi_id)
    assert one_less - measure_workspace(owner.pk).bytes >= 1 << 20
    assert (workspace / "big.bin").exists()
