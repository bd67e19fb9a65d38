"""services/sessions.py: append, move the leaf, label, rename; concurrency. (Loading paths
is tested in test_paths_selectors.py, the stored line in test_models.py.)"""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from sessions_app.core.errors import NotFound
from sessions_app.core.jsonl import serialize_entry
from sessions_app.core.messages import build_session_context
from sessions_app.core.tree import SessionTree
from sessions_app.models import Activity, Entry, Session
from sessions_app.selectors import paths
from sessions_app.services import sessions

pytestmark = [pytest.mark.embedded]


def user(text, ts=1):
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": ts}}


def assistant(text, ts=2):
    return {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "provider": "p",
            "model": "m",
            "timestamp": ts,
        },
    }


@pytest.mark.django_db
def test_append_set_leaf_label_rename_follow_pi(make_user):
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd="/w")
    a = sessions.append_entry(session, user("first"))
    b = sessions.append_entry(session, assistant("answer"))
    c = sessions.append_entry(session, user("second"))
    assert session.leaf_id == c.pk and session.entry_count == 3 and session.next_seq == 3
    assert (a.parent, b.parent.pk, c.parent.pk) == (None, a.pk, b.pk)
    assert session.first_message == "first"
    # Branch at a: move the leaf, append, the old branch stays.
    sessions.set_leaf(session, a.pi_id, actor=owner)
    d = sessions.append_entry(session, assistant("other answer"))
    assert d.parent_id == a.pk
    assert [e["id"] for e in paths.load_path(session)] == [a.pi_id, d.pi_id]
    assert [e["id"] for e in paths.load_path(session, c.pi_id)] == [a.pi_id, b.pi_id, c.pi_id]
    assert paths.load_path(session, None) == []
    assert paths.load_context(session, None) == build_session_context([], None)
    sessions.set_leaf(session, None)
    assert paths.load_path(session) == []
    sessions.set_leaf(session, d.pi_id)
    # Labels are label entries at the leaf; the newest wins, a blank one removes.
    sessions.label_entry(session, b.pi_id, "good", actor=owner)
    sessions.label_entry(session, b.pi_id, "better", actor=owner)
    assert Entry.objects.get(pk=b.pk).label == "better"
    sessions.label_entry(session, b.pi_id, "", actor=owner)
    assert Entry.objects.get(pk=b.pk).label == ""
    with pytest.raises(NotFound):
        sessions.label_entry(session, "nope", "x")
    sessions.rename_session(session, "  Named  ", actor=owner)
    session.refresh_from_db()
    assert session.name == "Named"
    # The pure core agrees on every entry: labels, name, context at each node.
    entries = paths.load_all_entries(session)
    index = SessionTree(entries)
    assert index.session_name == "Named" and index.get_label(b.pi_id) is None
    for entry in entries:
        assert build_session_context(paths.load_path(session, entry["id"]), entry["id"]) == (
            build_session_context(entries, entry["id"])
        )
    # Entries are stored as pi writes them (key order included).
    stored = Entry.objects.get(pk=c.pk)
    assert stored.line == serialize_entry(entries[2])
    assert stored.line.startswith('{"type":"message","id":')
    verbs = set(Activity.objects.filter(session=session).values_list("verb", flat=True))
    assert {"created", "navigated", "labelled", "renamed"} <= verbs


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_at_the_same_leaf_make_a_branch_and_lose_nothing(make_user):
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd="/w")
    root = sessions.append_entry(session, user("root"))
    writers, per_writer = 4, 15
    barrier = threading.Barrier(writers)
    errors = []

    def work(n):
        try:
            mine = Session.objects.get(pk=session.pk)
            barrier.wait()
            parent = root.pi_id
            for i in range(per_writer):
                # Every writer saw the same leaf: each builds its own branch from root.
                entry = sessions.append_entry(mine, user(f"w{n}-{i}"), parent_pi_id=parent)
                parent = entry.pi_id
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    session.refresh_from_db()
    total = 1 + writers * per_writer
    assert Entry.objects.filter(session=session).count() == total == session.entry_count
    assert sorted(Entry.objects.filter(session=session).values_list("seq", flat=True)) == list(
        range(total)
    )
    # A branch per writer at the root, each a complete chain of its own entries.
    assert Entry.objects.filter(session=session, parent=root).count() == writers
    entries = paths.load_all_entries(session)
    index = SessionTree(entries)
    for child in index.get_children(root.pi_id):
        branch = [child]
        while index.get_children(branch[-1]["id"]):
            (nxt,) = index.get_children(branch[-1]["id"])
            branch.append(nxt)
        texts = [e["message"]["content"] for e in branch]
        writer = texts[0].split("-")[0]
        assert texts == [f"{writer}-{i}" for i in range(per_writer)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_at_the_moving_leaf_lose_nothing(make_user):
    """Writers that follow the leaf (parent defaults to it): one chain, nothing lost."""
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd="/w")
    writers, per_writer = 3, 10
    errors = []

    def work(n):
        try:
            mine = Session.objects.get(pk=session.pk)
            for i in range(per_writer):
                sessions.append_entry(mine, user(f"w{n}-{i}"))
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    session.refresh_from_db()
    assert len(paths.load_path(session)) == writers * per_writer == session.entry_count
