"""Forks: pi's createBranchedSession (golden), and LibreChat's two wider scopes."""

from __future__ import annotations

import json

import pytest

from sessions_app.core.jsonl import serialize_entry
from sessions_app.core.messages import build_session_context
from sessions_app.core.tree import SessionTree
from sessions_app.models import Activity, Entry, Session
from sessions_app.selectors import paths
from sessions_app.selectors.exporter import export_jsonl
from sessions_app.services import sessions
from sessions_app.services.fork import ForkError, fork_session
from sessions_app.services.importer import import_jsonl_stream
from sessions_app.services.manage import delete_session
from tests.conformance.golden import load_golden
from tests.support.pi_files import as_file, header, jsonl_text, message

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


@pytest.fixture
def owner(make_user):
    return make_user("forker")


def _rename_new_labels(entries: list[dict], old_ids: set[str]) -> list[dict]:
    mapping, n = {}, 0
    for e in entries:
        if e["id"] not in old_ids:
            n += 1
            mapping[e["id"]] = f"L{n}"
    out = []
    for e in entries:
        e = dict(e)
        e["id"] = mapping.get(e["id"], e["id"])
        if e.get("parentId") in mapping:
            e["parentId"] = mapping[e["parentId"]]
        out.append(e)
    return out


def test_path_fork_matches_pi_create_branched_session(owner, make_user):
    actor = make_user("actor")
    cases = [
        c
        for c in load_golden("session_tree")["cases"]
        if c["input"].get("createBranchedSessionFrom")
    ]
    assert cases
    for number, case in enumerate(cases[:15]):
        entries = case["input"]["entries"]
        source = import_jsonl_stream(
            as_file(jsonl_text(header(f"src-{number}"), entries)), owner
        ).session
        target = case["input"]["createBranchedSessionFrom"]
        fork = fork_session(source, target, "path", actor)
        expected = case["output"]["createBranchedSession"]
        stored = paths.load_all_entries(fork)
        old_ids = {e["id"] for e in entries}
        for e in stored:  # label timestamps come from the labels, ours use no clock
            assert e["id"] in old_ids or e["type"] == "label"
        assert _rename_new_labels(stored, old_ids) == expected["entries"]
        leaf = _rename_new_labels(stored, old_ids)[-1]["id"] if stored else None
        assert leaf == expected["leafId"]
        assert build_session_context(paths.load_path(fork), fork.leaf.pi_id) == expected["context"]
        assert fork.source == Session.Source.FORK and fork.parent_id == source.pk
        assert fork.owner == actor and fork.parent_session_ref == source.pi_id
        assert fork.header()["parentSession"] == source.pi_id
        assert export_jsonl(fork).splitlines()[0].endswith(f'"parentSession":"{source.pi_id}"}}')
        assert Activity.objects.filter(session=source, verb="forked").exists()
        assert Activity.objects.filter(session=fork, verb="forked_from").exists()


def _tree_session(owner):
    # r - a - b - c        (path to c)
    #     |   \- b2 - b3   (sibling branch off b... hangs off a)
    #     \- a2 - a3
    #  x (second root)
    entries = [
        message("r", None, text="root", ts=1),
        message("a", "r", "assistant", "A", 2),
        message("b", "a", text="B", ts=3),
        message("c", "b", "assistant", "C", 4),
        message("c1", "c", text="after c", ts=5),
        message("b2", "a", text="B2", ts=6),
        message("b3", "b2", "assistant", "B3", 7),
        message("a2", "r", "assistant", "A2", 8),
        message("a3", "a2", text="A3", ts=9),
        message("x", None, text="other root", ts=10),
        {
            "type": "label",
            "id": "lb",
            "parentId": "x",
            "timestamp": "2026-01-02T00:00:00.000Z",
            "targetId": "b2",
            "label": "side",
        },
        {
            "type": "label",
            "id": "la",
            "parentId": "lb",
            "timestamp": "2026-01-02T00:00:01.000Z",
            "targetId": "a",
            "label": "main",
        },
    ]
    return import_jsonl_stream(as_file(jsonl_text(header("tree-src"), entries)), owner).session


def _ids(session):
    return [e["id"] for e in paths.load_all_entries(session) if e["type"] != "label"]


def _labels(session):
    return dict(session.entries.exclude(label="").values_list("pi_id", "label"))


def test_three_scopes(owner):
    source = _tree_session(owner)
    path = fork_session(source, "c", "path", owner)
    assert _ids(path) == ["r", "a", "b", "c"]
    assert _labels(path) == {"a": "main"}
    siblings = fork_session(source, "c", "path_and_siblings", owner)
    assert _ids(siblings) == ["r", "a", "b", "c", "b2", "a2", "x"] or _ids(siblings) == [
        "r",
        "a",
        "b",
        "c",
        "b2",
        "a2",
    ]
    assert "c1" not in _ids(siblings) and "b3" not in _ids(siblings)
    assert _labels(siblings) == {"a": "main", "b2": "side"}
    depth = fork_session(source, "b", "up_to_depth", owner)
    assert _ids(depth) == ["r", "a", "b", "b2", "a2", "a3", "x"]
    for fork in (path, siblings, depth):
        # The fork continues from the target: same context as the source at c / b.
        target = "b" if fork is depth else "c"
        assert build_session_context(
            paths.load_path(fork), fork.leaf.pi_id
        ) == build_session_context(paths.load_path(source, target), target)
        labels = [e for e in paths.load_all_entries(fork) if e["type"] == "label"]
        assert fork.leaf.pi_id == (labels[-1]["id"] if labels else target)
    # The source is untouched.
    assert Entry.objects.filter(session=source).count() == 12


def test_fork_errors_leave_nothing(owner):
    source = _tree_session(owner)
    before = Session.objects.count()
    with pytest.raises(ForkError, match="No entry"):
        fork_session(source, "missing", "path", owner)
    with pytest.raises(ForkError, match="Unknown fork scope"):
        fork_session(source, "c", "everything", owner)
    assert Session.objects.count() == before


def test_fork_of_a_live_session_then_continue(owner):
    source = sessions.create_session(owner=owner, cwd="/w")
    first = sessions.append_entry(
        source, {"type": "message", "message": {"role": "user", "content": "one", "timestamp": 1}}
    )
    sessions.append_entry(
        source,
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [],
                "provider": "p",
                "model": "m",
                "timestamp": 2,
            },
        },
    )
    fork = fork_session(source, first.pi_id, "path", owner)
    assert fork.leaf.pi_id == first.pi_id
    new = sessions.append_entry(
        fork, {"type": "message", "message": {"role": "user", "content": "two", "timestamp": 3}}
    )
    assert [e["id"] for e in paths.load_path(fork)] == [first.pi_id, new.pi_id]


def _labelled_chain(owner):
    """r - a - [label on a] - b - c, a side entry s off a labelled too, and a label
    set on b then removed: pi drops the path's label entries, re-chains b onto a and
    re-creates the label on a."""
    entries = [
        message("r", None, text="root", ts=1),
        message("a", "r", "assistant", "A", 2),
        {
            "type": "label",
            "id": "l1",
            "parentId": "a",
            "timestamp": "2026-01-02T00:00:00.000Z",
            "targetId": "a",
            "label": "start",
        },
        message("b", "l1", text="B", ts=3),
        message("s", "a", text="side", ts=4),
        {
            "type": "label",
            "id": "l2",
            "parentId": "b",
            "timestamp": "2026-01-02T00:00:01.000Z",
            "targetId": "b",
            "label": "gone soon",
        },
        {
            "type": "label",
            "id": "l3",
            "parentId": "l2",
            "timestamp": "2026-01-02T00:00:02.000Z",
            "targetId": "b",
            "label": "",
        },
        message("c", "l3", "assistant", "C", 5),
    ]
    return entries, import_jsonl_stream(
        as_file(jsonl_text(header("chain-src"), entries)), owner
    ).session


def _expected_fork(entries: list[dict], leaf: str, parent_session: str) -> list[str]:
    """The core's createBranchedSession (pi's, golden-tested) as export lines, label ids
    renamed L1, L2, ... in order."""
    tree = SessionTree(entries)
    result = tree.create_branched_session(leaf, parent_session=parent_session, now="T")
    old_ids = {e["id"] for e in entries}
    return [serialize_entry(e) for e in _rename_new_labels(result["entries"], old_ids)]


def _exported(session) -> tuple[dict, list[str], list[dict]]:
    lines = export_jsonl(session).splitlines()
    entries = [json.loads(line) for line in lines[1:]]
    old = {e["id"] for e in entries if e["type"] != "label"}
    renamed = [serialize_entry(e) for e in _rename_new_labels(entries, old)]
    return json.loads(lines[0]), renamed, entries


def test_forks_of_forks_export_pi_s_fork_of_the_exported_file(owner):
    entries, source = _labelled_chain(owner)
    first = fork_session(source, "c", "path", owner)
    header, lines, first_entries = _exported(first)
    assert lines == _expected_fork(entries, "c", source.pi_id)
    assert header["parentSession"] == source.pi_id
    # b hung off the dropped label l1: pi re-chains it onto a.
    assert [e.get("parentId") for e in first_entries[:4]] == [None, "r", "a", "b"]
    assert [(e["targetId"], e["label"]) for e in first_entries if e["type"] == "label"] == [
        ("a", "start")
    ]
    first_text = export_jsonl(first)
    extra = sessions.append_entry(
        first, {"type": "message", "message": {"role": "user", "content": "more", "timestamp": 9}}
    )
    first.refresh_from_db()
    # A fork of the fork, at its new leaf, is pi's fork of the first fork's file.
    first_file = [json.loads(line) for line in export_jsonl(first).splitlines()[1:]]
    second = fork_session(first, extra.pi_id, "path", owner)
    _, second_lines, _ = _exported(second)
    assert second_lines == _expected_fork(first_file, extra.pi_id, first.pi_id)
    # Deleting the sources leaves each fork's file as it was, byte for byte.
    second_text = export_jsonl(second)
    first.refresh_from_db()
    first_text = export_jsonl(first)
    delete_session(source, actor=owner, confirm=source.pi_id)
    first.refresh_from_db()
    assert export_jsonl(first) == first_text
    delete_session(first, actor=owner, confirm=first.pi_id)
    second.refresh_from_db()
    assert export_jsonl(second) == second_text
    assert [e["id"] for e in paths.load_path(second)][-1] == second.leaf.pi_id
