"""selectors/panels/tree.tree_index: the index of a session's tree is built once per
version of the session (per process) and shared; an append or a label makes a new one;
rows read inside a transaction are never kept; the cache holds a bounded node count."""

from __future__ import annotations

import pytest
from django.db import transaction

from sessions_app.selectors.panels import tree
from sessions_app.services import sessions
from tests.support.branchy_session import assistant, user

pytestmark = [pytest.mark.embedded]


@pytest.mark.django_db(transaction=True)
def test_one_index_per_version_of_the_session(make_user, monkeypatch):
    monkeypatch.setattr(tree, "_INDEX_CACHE", type(tree._INDEX_CACHE)())
    session = sessions.create_session(owner=make_user(), cwd="/w")
    first = sessions.append_entry(session, user("hello"))
    sessions.append_entry(session, assistant("hi"))
    session.refresh_from_db()
    index = tree.tree_index(session)
    assert tree.tree_index(session) is index and len(index) == 2

    sessions.append_entry(session, {"type": "label", "targetId": first.pi_id, "label": "start"})
    session.refresh_from_db()
    newer = tree.tree_index(session)
    assert newer is not index and len(newer) == 3
    assert newer.by_id[first.pi_id].label == "start" and index.by_id[first.pi_id].label == ""
    assert list(tree._INDEX_CACHE.values()) == [newer]  # the older version is dropped

    with transaction.atomic():
        sessions.append_entry(session, user("uncommitted"))
        session.refresh_from_db()
        inside = tree.tree_index(session)
        assert len(inside) == 4 and tree.tree_index(session) is not inside
    assert list(tree._INDEX_CACHE.values()) == [newer]
    tree.forget_tree_indexes()
    assert not tree._INDEX_CACHE


@pytest.mark.django_db(transaction=True)
def test_the_cache_keeps_a_bounded_number_of_nodes(make_user, monkeypatch):
    monkeypatch.setattr(tree, "_INDEX_CACHE", type(tree._INDEX_CACHE)())
    monkeypatch.setattr(tree, "TREE_INDEX_CACHE_NODES", 5)
    owner = make_user()
    made = []
    for size in (2, 2, 3):
        session = sessions.create_session(owner=owner, cwd="/w")
        for i in range(size):
            sessions.append_entry(session, user(f"m{i}"))
        session.refresh_from_db()
        made.append((session, tree.tree_index(session)))
    # 2 + 2 + 3 > 5: the oldest went; the newest two (5 nodes) stay
    assert [len(i) for i in tree._INDEX_CACHE.values()] == [2, 3]
    assert tree.tree_index(made[0][0]) is not made[0][1]
    big = sessions.create_session(owner=owner, cwd="/w")
    for i in range(6):
        sessions.append_entry(big, user(f"b{i}"))
    big.refresh_from_db()
    tree.tree_index(big)
    assert not tree._INDEX_CACHE  # one index over the budget is not kept
