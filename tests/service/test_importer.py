"""Importing pi session files: real pi sessions, migration, bad input, re-import."""

from __future__ import annotations

import json
import uuid

import pytest
from django.urls import reverse

from sessions_app.core.jsonl import serialize_entry
from sessions_app.core.messages import build_session_context
from sessions_app.models import Activity, Entry, Session
from sessions_app.selectors import paths
from sessions_app.selectors.exporter import export_bytes
from sessions_app.services.importer import SessionImportError, import_jsonl_stream
from tests.conformance.golden import load_golden
from tests.support.pi_files import (
    FIXTURES,
    as_file,
    assert_context_matches_core,
    chain,
    do_import,
    fixture,
    fixture_bytes,
    header,
    jsonl_text,
    leaves,
    message,
)
from tests.support.tree_data import import_branched
from tests.support.web import client_for

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


@pytest.fixture
def owner(make_user):
    return make_user("importer")


# --- pi's own sessions ----------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_pi_fixture_imports_exports_byte_identical_and_builds_the_same_context(name, owner):
    head, entries = fixture(name)
    data = fixture_bytes(name)
    report = do_import(data, owner)
    session = report.session
    assert report.status == "created"
    assert report.entries_added == len(entries) and not report.skipped and not report.warnings
    assert session.pi_id == head["id"] and session.source == Session.Source.IMPORTED
    assert session.leaf.pi_id == entries[-1]["id"]  # pi: the last entry is the leaf
    assert list(session.entries.order_by("seq").values_list("pi_id", flat=True)) == [
        e["id"] for e in entries
    ]
    assert paths.load_all_entries(session) == entries
    assert export_bytes(session) == data  # byte for byte, header included
    leaf_ids = leaves(entries) + [e["id"] for e in entries[:: max(1, len(entries) // 12)]]
    assert_context_matches_core(session, entries, leaf_ids)
    assert Activity.objects.filter(session=session, verb="imported").count() == 1


def test_import_export_import_gives_identical_entries(owner):
    name = FIXTURES[0]
    first = do_import(fixture_bytes(name), owner).session
    exported = export_bytes(first)
    entries_before = paths.load_all_entries(first)
    first.delete()
    second = do_import(exported, owner).session
    assert paths.load_all_entries(second) == entries_before
    assert export_bytes(second) == exported


def test_context_at_every_leaf_of_branched_pi_trees_matches_the_core(owner):
    cases = load_golden("session_tree")["cases"]
    for number, case in enumerate(cases[:20]):
        entries = case["input"]["entries"]
        head = header(f"tree-case-{number}")
        report = do_import(jsonl_text(head, entries), owner)
        session = report.session
        assert report.entries_added == len(entries)
        assert_context_matches_core(session, entries, [e["id"] for e in entries])
        # Labels and name as pi computes them.
        expected_labels = case["output"]["labels"]
        stored = dict(session.entries.exclude(label="").values_list("pi_id", "label"))
        assert stored == expected_labels
        assert (session.name or None) == case["output"]["sessionName"]


# --- migration ------------------------------------------------------------------------


def _reid(entries: list[dict]) -> list[dict]:
    mapping = {}
    for i, e in enumerate(x for x in entries if x.get("type") != "session"):
        mapping[e["id"]] = f"e{i + 1:04d}"
    out = []
    for e in entries:
        e = json.loads(json.dumps(e))
        for key in ("id", "parentId", "firstKeptEntryId", "fromId", "targetId"):
            if e.get(key) in mapping:
                e[key] = mapping[e[key]]
        out.append(e)
    return out


def test_v1_and_v2_files_are_migrated_like_pi(owner):
    for number, case in enumerate(load_golden("migrate")["cases"]):
        items = case["input"].get("entries")
        if not items or not isinstance(items[0], dict) or items[0].get("type") != "session":
            continue
        items = json.loads(json.dumps(items))
        items[0]["id"] = f"migrate-{number}"
        report = do_import(jsonl_text(items[0], items[1:]), owner)
        expected = case["output"]["entries"]
        stored = paths.load_all_entries(report.session)
        assert _reid(stored) == _reid(expected)[1:], case.get("tags")
        version = items[0].get("version")
        if version is None or version < 3:
            assert report.migrated_from == (version or 1)
        if stored:
            assert report.session.leaf.pi_id == stored[-1]["id"]


# --- bad input --------------------------------------------------------------------------


def test_empty_file_is_refused(owner):
    for data in (b"", b"\n\n  \n"):
        with pytest.raises(SessionImportError, match="empty"):
            do_import(data, owner)
    assert not Session.objects.exists()


def test_header_only_file_is_an_empty_session(owner):
    report = do_import(serialize_entry(header()) + "\n", owner)
    assert report.status == "created" and report.entries_added == 0
    assert report.session.leaf is None and report.session.entry_count == 0
    assert build_session_context(paths.load_path(report.session), None)["messages"] == []


def test_all_lines_malformed_is_refused_with_line_numbers(owner):
    with pytest.raises(SessionImportError, match=r"no line could be read \(3 malformed: line 1"):
        do_import(b"{nope\n[1,2\nnot json\n", owner)
    assert not Session.objects.exists()


def test_first_line_must_be_a_header(owner):
    with pytest.raises(
        SessionImportError,
        match="line 1 is not a pi session header: it is a 'message' entry, so the start",
    ):
        do_import(jsonl_text(message("a", None), [])[:-1].split("\n")[0] + "\n", owner)
    assert not Session.objects.exists()


def test_a_first_line_without_a_type_is_said_in_words(owner):
    with pytest.raises(SessionImportError) as raised:
        do_import(b'{nope\n{"id": "x"}\n', owner)
    assert (
        "line 2 (the first line that could be read) is not a pi session header: "
        'it is a JSON object without a "type"'
    ) in str(raised.value)
    assert "None" not in str(raised.value)
    assert not Session.objects.exists()


def test_malformed_lines_are_skipped_and_reported_with_numbers(owner):
    entries = chain(3)
    lines = jsonl_text(header(), entries).splitlines()
    lines.insert(2, '{"type": "message", oops}')
    lines.insert(4, "42")
    report = do_import("\n".join(lines) + "\n", owner)
    assert report.entries_added == 3
    assert [n for n, _ in report.skipped] == [3, 5]
    assert "invalid JSON" in report.skipped[0][1] and "not a JSON object" in report.skipped[1][1]


def test_truncated_last_line_is_skipped_and_the_rest_imported(owner):
    entries = chain(4)
    text = jsonl_text(header(), entries)
    text = text[: len(text) - 25]  # pi was killed mid-write
    report = do_import(text, owner)
    assert report.entries_added == 3
    assert report.skipped and report.skipped[0][0] == 5
    assert report.session.leaf.pi_id == entries[2]["id"]


def test_non_utf8_bytes_are_reported_not_fatal(owner):
    entries = chain(2)
    raw = jsonl_text(header(), entries).encode()
    raw = raw.replace(b'"m1"', b'"m\xff1"')
    report = do_import(raw, owner)
    assert report.entries_added == 2
    assert any(w.startswith("line 3:") and "UTF-8" in w for w in report.warnings)
    stored = paths.load_all_entries(report.session)
    assert stored[1]["message"]["content"][0]["text"] == "m\ufffd1"


def test_dangling_parent_is_stored_and_reported(owner):
    entries = chain(2) + [message("orphan", "nowhere", text="lost")]
    report = do_import(jsonl_text(header(), entries), owner)
    orphan = Entry.objects.get(session=report.session, pi_id="orphan")
    assert orphan.parent is None and orphan.parent_pi_id == "nowhere"
    assert any("'nowhere'" in w and w.startswith("line 4:") for w in report.warnings)
    assert paths.load_path(report.session, "orphan") == [entries[2]]


def test_parent_cycle_rejects_the_whole_file(owner):
    entries = [message("a", "c"), message("b", "a"), message("c", "b")]
    with pytest.raises(SessionImportError, match="parentId cycle"):
        do_import(jsonl_text(header(), entries), owner, batch_size=2)
    assert not Session.objects.exists() and not Entry.objects.exists()
    with pytest.raises(SessionImportError, match="its own parent"):
        do_import(jsonl_text(header(), [message("a", "a")]), owner)
    assert not Session.objects.exists()


def test_duplicate_entry_id_rejects_the_whole_file(owner):
    entries = chain(3) + [message("e0001", "e0002")]
    with pytest.raises(
        SessionImportError, match=r"line 5: duplicate entry id 'e0001' \(first used on line 3\)"
    ):
        do_import(jsonl_text(header(), entries), owner, batch_size=2)
    assert not Session.objects.exists() and not Entry.objects.exists()


def test_forward_references_and_batches(owner):
    # A child written before its parent, parents across batch boundaries.
    entries = chain(7)
    entries.insert(0, entries.pop(3))
    report = do_import(jsonl_text(header(), entries), owner, batch_size=2)
    assert not report.warnings
    stored = {e.pi_id: e for e in Entry.objects.filter(session=report.session)}
    for e in entries:
        parent = stored[e["id"]].parent
        assert (parent.pi_id if parent else None) == e["parentId"]
    assert_context_matches_core(report.session, entries, [e["id"] for e in entries])


def test_a_50_mb_single_line_imports(owner):
    big = "x" * (50 * 1024 * 1024)
    entries = [message("a", None, text="start"), message("b", "a", "assistant", big, 2)]
    data = jsonl_text(header(), entries).encode()
    report = do_import(data, owner)
    assert report.entries_added == 2
    entry = Entry.objects.get(session=report.session, pi_id="b")
    assert len(entry.preview) == 300 and entry.token_count == len(big) // 4
    assert export_bytes(report.session) == data


def test_a_50_mb_line_of_garbage_is_reported_briefly(owner):
    garbage = "{" + "z" * (50 * 1024 * 1024) + "\n"
    data = serialize_entry(header()) + "\n" + garbage + serialize_entry(chain(1)[0]) + "\n"
    report = do_import(data, owner)
    assert report.entries_added == 1 and report.skipped[0][0] == 2
    assert len(report.skipped[0][1]) < 200
    # With no valid entry at all the file is refused, as briefly.
    with pytest.raises(SessionImportError) as refused:
        do_import(serialize_entry(header("other-session")) + "\n" + garbage, owner)
    assert len(str(refused.value)) < 400


def test_labels_and_session_name_follow_pi(owner):
    entries = chain(3)
    extra = [
        {
            "type": "label",
            "id": "l1",
            "parentId": "e0002",
            "timestamp": "2026-01-01T00:01:00.000Z",
            "targetId": "e0000",
            "label": "first",
        },
        {
            "type": "label",
            "id": "l2",
            "parentId": "l1",
            "timestamp": "2026-01-01T00:01:01.000Z",
            "targetId": "e0001",
            "label": "two",
        },
        {
            "type": "label",
            "id": "l3",
            "parentId": "l2",
            "timestamp": "2026-01-01T00:01:02.000Z",
            "targetId": "e0000",
            "label": "newest",
        },
        {
            "type": "label",
            "id": "l4",
            "parentId": "l3",
            "timestamp": "2026-01-01T00:01:03.000Z",
            "targetId": "e0001",
        },
        {
            "type": "session_info",
            "id": "s1",
            "parentId": "l4",
            "timestamp": "2026-01-01T00:01:04.000Z",
            "name": "Old",
        },
        {
            "type": "session_info",
            "id": "s2",
            "parentId": "s1",
            "timestamp": "2026-01-01T00:01:05.000Z",
            "name": "New name",
        },
    ]
    report = do_import(jsonl_text(header(), entries + extra), owner)
    labels = dict(report.session.entries.exclude(label="").values_list("pi_id", "label"))
    assert labels == {"e0000": "newest"}
    assert report.session.name == "New name"
    assert report.session.first_message == "m0"


def test_nul_and_lone_surrogates_survive_on_every_database(owner):
    entries = chain(2)
    entries[1]["message"]["content"][0]["text"] = "nul\x00 and lone \ud800 and pair \U0001f600"
    data = jsonl_text(header(), entries).encode()
    report = do_import(data, owner)
    # jsonb cannot hold them: the payload column has U+FFFD; the exact text is in `line`.
    assert paths.load_path(report.session) == entries
    assert export_bytes(report.session) == data


# --- re-import ----------------------------------------------------------------------------


def test_reimport_same_file_is_unchanged(owner):
    data = jsonl_text(header(), chain(5))
    first = do_import(data, owner)
    again = do_import(data, owner)
    assert again.status == "unchanged" and again.entries_added == 0
    assert again.session.pk == first.session.pk
    assert Session.objects.count() == 1 and Entry.objects.count() == 5
    # The same content written differently (spaces) is still the same session.
    spaced = "\n".join(json.dumps(x) for x in [header(), *chain(5)]) + "\n"
    assert do_import(spaced, owner).status == "unchanged"
    assert Entry.objects.count() == 5


def test_reimport_of_a_grown_file_adds_only_the_new_entries(owner):
    entries = chain(6)
    first = do_import(jsonl_text(header(), entries[:4]), owner, batch_size=3)
    grown = entries + [
        {
            "type": "label",
            "id": "lab",
            "parentId": "e0005",
            "timestamp": "2026-01-01T00:02:00.000Z",
            "targetId": "e0001",
            "label": "kept",
        }
    ]
    report = do_import(jsonl_text(header(), grown), owner, batch_size=3)
    assert report.status == "updated" and report.entries_added == 3
    session = Session.objects.get()
    assert session.pk == first.session.pk and session.entry_count == 7
    assert session.leaf.pi_id == "lab"
    assert Entry.objects.get(session=session, pi_id="e0004").parent.pi_id == "e0003"
    assert Entry.objects.get(session=session, pi_id="e0001").label == "kept"
    assert list(session.entries.order_by("seq").values_list("seq", flat=True)) == list(range(7))
    assert paths.load_all_entries(session) == grown


def test_reimport_with_conflicting_content_is_refused(owner):
    entries = chain(4)
    do_import(jsonl_text(header(), entries), owner)
    changed = json.loads(json.dumps(entries))
    changed[2]["message"]["content"] = "rewritten"
    with pytest.raises(SessionImportError, match="differs from the stored session"):
        do_import(jsonl_text(header(), changed), owner)
    with pytest.raises(SessionImportError, match="entries that are not in this file"):
        do_import(jsonl_text(header(), entries[:2]), owner)
    with pytest.raises(SessionImportError, match="its id is already taken"):
        do_import(jsonl_text(header(cwd="/elsewhere"), entries), owner)
    assert Session.objects.count() == 1 and Entry.objects.count() == 4
    assert paths.load_all_entries(Session.objects.get()) == entries


def test_reimport_by_another_user_is_refused(owner, make_user):
    data = jsonl_text(header(), chain(2))
    do_import(data + serialize_entry(message("x", "e0001")) + "\n", owner)
    with pytest.raises(SessionImportError, match="its id is already taken"):
        do_import(data, make_user("someone"))


def test_big_session_path_walk_matches_the_recursive_query(owner, monkeypatch):
    """Sessions above PATH_WALK_MIN entries walk parent links in Python: same results."""
    head, entries = fixture(FIXTURES[0])
    session = do_import(fixture_bytes(FIXTURES[0]), owner).session
    some = leaves(entries) + [e["id"] for e in entries[::97]]
    by_query = {leaf: paths.load_path(session, leaf) for leaf in some}
    monkeypatch.setattr(paths, "PATH_WALK_MIN", 10)
    for leaf in some:
        assert paths.load_path(session, leaf) == by_query[leaf]
    assert_context_matches_core(session, entries, some)


def test_imported_and_grown_entries_are_searchable(owner):
    from sessions_app.selectors.search import search

    entries = chain(4)
    entries[1]["message"]["content"][0]["text"] = "the zanzibarquux answer"
    do_import(jsonl_text(header(), entries[:3]), owner)
    hits = search(owner, "zanzibarquux").hits
    assert [(h.session_pi_id, h.entry_pi_id) for h in hits] == [(header()["id"], "e0001")]
    grown = entries + [message("e0004", "e0003", text="later flamingoquux", ts=9)]
    report = do_import(jsonl_text(header(), grown), owner)
    assert report.status == "updated" and report.after_commit_seconds > 0
    assert [h.entry_pi_id for h in search(owner, "flamingoquux").hits] == ["e0004"]
    assert len(search(owner, "zanzibarquux").hits) == 1  # not indexed twice


def test_the_work_after_the_commit_can_be_left_to_the_caller(owner):
    from sessions_app.models import SearchDocument
    from sessions_app.selectors.search import search
    from sessions_app.services.importer import finish_import

    entries = chain(2) + [message("e0002", "e0001", text="a quetzalquux reply", ts=3)]
    report = do_import(jsonl_text(header(), entries), owner, after_commit="off")
    assert report.entries_added == 3 and report.after_commit_seconds == 0
    assert not SearchDocument.objects.exists() and search(owner, "quetzalquux").hits == []
    assert finish_import(report.session.pk, 0) == 3
    assert finish_import(report.session.pk, 0) == 3  # again: nothing twice
    assert SearchDocument.objects.count() == 3
    assert [h.entry_pi_id for h in search(owner, "quetzalquux").hits] == ["e0002"]


def test_an_overlong_line_is_skipped_without_holding_it(owner, monkeypatch):
    """A line over MAX_LINE_BYTES is reported with its size and dropped; the lines after
    it keep their numbers and import (here with a tiny limit, as a 256 MB line would)."""
    from sessions_app.services import importer

    monkeypatch.setattr(importer, "MAX_LINE_BYTES", 300)
    monkeypatch.setattr(importer, "READ_CHUNK", 64)
    entries = chain(3)
    big = serialize_entry(message("zz", "e0000", text="x" * 1000))
    lines = jsonl_text(header(), entries).splitlines()
    data = "\n".join([*lines[:2], big, *lines[2:]])  # no newline after the last line
    report = do_import(data, owner)
    assert report.entries_added == 3
    assert report.skipped == [(3, f"line too long ({len(big)} bytes; the limit is 300)")]
    assert report.bytes_read == len(data)
    assert [e.pi_id for e in Entry.objects.filter(session=report.session).order_by("seq")] == [
        "e0000",
        "e0001",
        "e0002",
    ]


@pytest.mark.parametrize("bad", ["x/y", "..", ".", "a b", "x" * 65, "ü"])
def test_a_bad_header_id_refuses_the_file(make_user, bad):
    owner = make_user()
    data = jsonl_text(header(bad), [message("aaaa0001", None)])
    with pytest.raises(SessionImportError) as exc:
        import_jsonl_stream(as_file(data), owner, filename="f.jsonl")
    assert "session header id" in str(exc.value)
    assert not Session.objects.filter(owner=owner).exists()
    # The session list still renders.
    assert client_for(owner).get(reverse("sessions_app:session_list")).status_code == 200


def test_a_bad_entry_id_is_a_reported_malformed_line(make_user):
    owner = make_user()
    sid = str(uuid.uuid4())
    entries = [
        message("aaaa0001", None),
        message("bad/id", "aaaa0001", "assistant", ts=2),
        message("..", "aaaa0001", "assistant", ts=3),
        message("aaaa0004", "aaaa0001", "assistant", ts=4),
    ]
    data = jsonl_text(header(sid), entries)
    report = import_jsonl_stream(as_file(data), owner, filename="f.jsonl")
    assert report.skipped_count == 2
    assert [n for n, _ in report.skipped] == [3, 4]
    assert all("not a valid id" in reason for _, reason in report.skipped)
    ids = set(Entry.objects.filter(session__pi_id=sid).values_list("pi_id", flat=True))
    assert ids == {"aaaa0001", "aaaa0004"}
    page = client_for(owner).get(reverse("sessions_app:session_detail", args=[sid]))
    assert page.status_code == 200


def test_pi_style_ids_stay_valid(make_user):
    from sessions_app.core.import_lines import valid_id

    assert valid_id(str(uuid.uuid4())) and valid_id("e0000013") and valid_id("a1b2c3d4")
    s = import_branched(make_user(), "/tmp/x", session_id=str(uuid.uuid4()))
    assert s.entries.count() > 10
