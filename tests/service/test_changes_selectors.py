"""selectors/changes.py: what the agent changed in the files, per node, per branch and
for two branches compared. From the workspace's snapshots (real git, recorded by
services/changes.py) when there are some, else replayed from the session's edit and
write calls (an imported session), marked as reconstructed; every diff cut to the
PIWEB_DIFF_MAX_* bounds."""

from __future__ import annotations

import io
import json

import pytest

from sessions_app.core.file_changes import apply_edits, edits_of
from sessions_app.models import Entry, FileSnapshot
from sessions_app.selectors import changes as changes_selectors
from sessions_app.services import changes
from sessions_app.services.importer import import_jsonl_stream

pytestmark = [
    pytest.mark.embedded,
    pytest.mark.django_db,
    pytest.mark.usefixtures("own_snapshot_dir"),
]


@pytest.fixture
def owner(make_user):
    return make_user()


def user(eid, parent, text="go"):
    return {"type": "message", "id": eid, "parentId": parent,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1}}  # fmt: skip


def call(eid, parent, tool, arguments):
    return {"type": "message", "id": eid, "parentId": parent,
            "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {"role": "assistant", "content": [
                {"type": "toolCall", "id": f"t-{eid}", "name": tool, "arguments": arguments}],
                "api": "x", "provider": "x", "model": "x", "stopReason": "toolUse",
                "timestamp": 2}}  # fmt: skip


def result(eid, parent, tool):
    return {"type": "message", "id": eid, "parentId": parent,
            "timestamp": "2026-01-01T00:00:03.000Z",
            "message": {"role": "toolResult", "toolCallId": f"t-{parent}", "toolName": tool,
                        "content": [{"type": "text", "text": "ok"}], "isError": False,
                        "timestamp": 3}}  # fmt: skip


def imported(owner, entries, cwd="/proj", sid="imp-1"):
    head = {"type": "session", "version": 3, "id": sid,
            "timestamp": "2026-01-01T00:00:00.000Z", "cwd": cwd}  # fmt: skip
    data = "\n".join(json.dumps(line) for line in [head, *entries]).encode() + b"\n"
    return import_jsonl_stream(io.BytesIO(data), owner=owner).session


def rows(n, prefix="row"):
    return "".join(f"{prefix} {i}\n" for i in range(n))


def branched(owner):
    """u1 → a1 writes base.txt; then two branches: a2 edits it, b2 writes other.txt."""
    return imported(
        owner,
        [
            user("u1", None),
            call("a1", "u1", "write", {"path": "base.txt", "content": rows(5)}),
            result("r1", "a1", "write"),
            call("a2", "r1", "edit", {"path": "base.txt",
                                      "edits": [{"oldText": "row 2\n", "newText": "two\n"}]}),
            result("r2", "a2", "edit"),
            call("b2", "r1", "write", {"path": "other.txt", "content": rows(3, "b")}),
            result("s2", "b2", "write"),
        ],
    )  # fmt: skip


def by_path(change_set):
    return {f.path: f for f in change_set.files}


# --- reconstructed (moved from test_changes.py) ---------------------------------------------


def test_imported_edit_calls_are_reconstructed_and_equal_applying_them(owner):
    content = "".join(f"row {n}\n" for n in range(30))
    edit = {"path": "/proj/notes.md", "edits": [{"oldText": "row 10\n", "newText": "ten\n"}]}
    lines = [
        {"type": "session", "version": 3, "id": "imp-1", "timestamp": "2026-01-01T00:00:00.000Z",
         "cwd": "/proj"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": "go", "timestamp": 1}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "toolCall", "id": "t1", "name": "write",
              "arguments": {"path": "notes.md", "content": content}}],
             "api": "x", "provider": "x", "model": "x", "stopReason": "toolUse", "timestamp": 2}},
        {"type": "message", "id": "r1", "parentId": "a1", "timestamp": "2026-01-01T00:00:03.000Z",
         "message": {"role": "toolResult", "toolCallId": "t1", "toolName": "write",
                     "content": [{"type": "text", "text": "ok"}], "isError": False, "timestamp": 3}},
        {"type": "message", "id": "a2", "parentId": "r1", "timestamp": "2026-01-01T00:00:04.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "toolCall", "id": "t2", "name": "edit", "arguments": edit}],
             "api": "x", "provider": "x", "model": "x", "stopReason": "toolUse", "timestamp": 4}},
        {"type": "message", "id": "r2", "parentId": "a2", "timestamp": "2026-01-01T00:00:05.000Z",
         "message": {"role": "toolResult", "toolCallId": "t2", "toolName": "edit",
                     "content": [{"type": "text", "text": "ok"}], "isError": False, "timestamp": 5}},
    ]  # fmt: skip
    data = "\n".join(json.dumps(line) for line in lines).encode() + b"\n"
    report = import_jsonl_stream(io.BytesIO(data), owner=owner)
    session = report.session
    edited = changes_selectors.entry_changes(session, "a2")
    assert edited.source == "reconstructed"
    (change,) = edited.files
    assert change.path == "notes.md" and change.reconstructed and not change.partial
    after = apply_edits(content, edits_of(edit))
    removed = [x[1:] for x in change.diff.splitlines() if x.startswith("-") and x[:3] != "---"]
    added = [x[1:] for x in change.diff.splitlines() if x.startswith("+") and x[:3] != "+++"]
    assert removed == ["row 10"] and added == ["ten"]
    assert after.replace("ten\n", "row 10\n") == content
    # The whole path: the write then the edit, merged per file.
    listed = changes_selectors.path_changes(session, "r2")
    assert [p["id"] for p, _ in listed] == ["a1", "a2"]
    # The tree rows' counts, replayed over the whole tree.
    from sessions_app.selectors.panels.tree import tree_index

    counts = changes_selectors.reconstructed_counts(session, tree_index(session))
    assert counts["a2"]["files"] == 1 and counts["a2"]["reconstructed"]
    assert (counts["a2"]["added"], counts["a2"]["removed"]) == (1, 1)
    assert counts["a1"]["added"] == 30


# --- reconstructed: nodes, branches, compare ------------------------------------------------


def test_a_node_without_file_calls_changed_nothing(owner):
    session = branched(owner)
    for pi_id in ("u1", "r1"):
        nothing = changes_selectors.entry_changes(session, pi_id)
        assert nothing.source == "none" and nothing.files == [] and nothing.end_id == pi_id


def test_a_branch_counts_from_its_branch_point_and_compare_splits_there(owner):
    session = branched(owner)
    assert changes_selectors.branch_point(session, ["u1", "a1", "r1", "a2", "r2"]) == "r1"
    assert changes_selectors.branch_point(session, ["u1", "a1", "r1"]) is None  # no fork above
    edited = changes_selectors.branch_changes(session, "r2")
    assert edited.start_id == "r1" and edited.end_id == "r2"
    assert edited.source == "reconstructed"
    assert {p: (f.added, f.removed) for p, f in by_path(edited).items()} == {"base.txt": (1, 1)}
    whole = changes_selectors.branch_changes(session, "r2", start_pi_id="u1")
    # The write and the edit merged per file: their counts add up, their diffs follow.
    merged = by_path(whole)["base.txt"]
    assert (merged.added, merged.removed) == (5 + 1, 1)
    assert merged.diff.index("+row 2") < merged.diff.index("-row 2\n+two")
    compared = changes_selectors.compare_changes(session, "r2", "s2")
    assert compared["ancestor"] == "r1"
    assert list(by_path(compared["a"])) == ["base.txt"]
    assert list(by_path(compared["b"])) == ["other.txt"]
    assert by_path(compared["b"])["other.txt"].added == 3


def test_reconstructed_counts_give_up_past_the_entry_limit(owner, monkeypatch):
    from sessions_app.selectors.panels.tree import tree_index

    session = branched(owner)
    counts = changes_selectors.reconstructed_counts(session, tree_index(session))
    assert set(counts) == {"a1", "a2", "b2"}
    monkeypatch.setattr(changes_selectors, "MAX_RECONSTRUCTED_ENTRIES", 2)
    assert changes_selectors.reconstructed_counts(session, tree_index(session)) == {}


def test_diffs_are_cut_per_file_and_per_answer_at_a_line_end(owner, settings):
    session = imported(
        owner,
        [
            user("u1", None),
            call("a1", "u1", "write", {"path": "big.txt", "content": rows(200)}),
            result("r1", "a1", "write"),
            call("a2", "r1", "write", {"path": "second.txt", "content": rows(200, "s")}),
            result("r2", "a2", "write"),
        ],
    )
    whole = changes_selectors.branch_changes(session, "r2")
    assert not whole.truncated and all(len(f.diff) > 1000 for f in whole.files)
    settings.PIWEB_DIFF_MAX_FILE_BYTES = 500
    cut = changes_selectors.entry_changes(session, "a1")
    (change,) = cut.files
    assert cut.truncated and change.truncated
    assert 0 < len(change.diff) <= 500 and change.diff.endswith("\n")
    assert change.added == 200  # the counts stay whole
    settings.PIWEB_DIFF_MAX_FILE_BYTES = 100_000
    settings.PIWEB_DIFF_MAX_TOTAL_BYTES = 800
    both = changes_selectors.branch_changes(session, "r2")
    assert both.truncated and sum(len(f.diff) for f in both.files) <= 800
    listed = changes_selectors.path_changes(session, "r2", budget=300)
    assert [p["id"] for p, _ in listed] == ["a1", "a2"]
    assert sum(len(f.diff) for _, c in listed for f in c.files) <= 300
    assert listed[1][1].files[0].diff == "" and listed[1][1].truncated


# --- snapshots ------------------------------------------------------------------------------


def test_snapshots_give_the_real_diff_and_the_rows_when_git_is_out_of_reach(
    owner, workspace, settings, redis_ready
):
    session = imported(
        owner,
        [user("u1", None), call("a1", "u1", "write", {"path": "f.txt", "content": "x"}),
         result("r1", "a1", "write"), call("a2", "r1", "write", {"path": "f.txt", "content": "y"}),
         result("r2", "a2", "write")],
        cwd=str(workspace),
        sid="snap-1",
    )  # fmt: skip
    entry = {e.pi_id: e for e in Entry.objects.filter(session=session)}
    (workspace / "f.txt").write_text("one\ntwo\n")
    first = changes.record(session, entry["a1"], None, FileSnapshot.Kind.TURN)
    (workspace / "f.txt").write_text("one\nTWO\nthree\n")
    second = changes.record(session, entry["a2"], first, FileSnapshot.Kind.TURN)
    assert first and second and first != second

    edited = changes_selectors.entry_changes(session, "a2")
    assert edited.source == "snapshot" and (edited.base, edited.commit) == (first, second)
    (change,) = edited.files
    assert (change.path, change.added, change.removed) == ("f.txt", 2, 1)
    assert "-two\n" in change.diff and "+TWO\n" in change.diff and "+three\n" in change.diff
    assert not change.reconstructed  # the files as they were, not the calls replayed
    counts = changes_selectors.change_counts(session)
    assert counts["a2"] == {"files": 1, "added": 2, "removed": 1, "kind": "turn"}
    assert changes_selectors.state_at(session, "r2").commit == second
    assert changes_selectors.state_at(session, "u1") is None
    assert changes_selectors.snapshots_exist(session)

    settings.PIWEB_SNAPSHOTS = False  # the repository is out of reach: the stored rows
    unreachable = changes_selectors.entry_changes(session, "a2")
    assert "not reachable" in unreachable.note
    (row,) = unreachable.files
    assert (row.path, row.added, row.removed, row.diff) == ("f.txt", 2, 1, "")
