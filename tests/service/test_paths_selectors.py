"""selectors/paths.py: a path is loaded in one query, big sessions walk with a parent cache
that sees new entries, the tail of a path, and the context at every node equal to pi 1.6.0's."""

from __future__ import annotations

import pytest

from sessions_app.core.messages import build_session_context
from sessions_app.selectors import paths
from sessions_app.services import sessions
from sessions_app.services.importer import import_jsonl_stream
from tests.support.branchy_session import assistant, user
from tests.support.pi16_sessions import session, session_names
from tests.support.pi_files import as_file

pytestmark = [pytest.mark.embedded]


@pytest.mark.django_db
def test_load_path_of_a_deep_chain_is_one_query(make_user, django_assert_max_num_queries):
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd="/w")
    for i in range(300):
        sessions.append_entry(session, user(f"m{i}"))
    with django_assert_max_num_queries(1):
        path = paths.load_path(session)
    assert len(path) == 300 and path[0]["parentId"] is None
    assert all(path[i + 1]["parentId"] == path[i]["id"] for i in range(299))


@pytest.mark.django_db(transaction=True)
def test_big_session_walk_with_the_parent_cache_sees_new_entries(make_user, monkeypatch):
    """Outside a transaction big sessions cache their parent links; appends and branches
    made afterwards are still seen."""
    monkeypatch.setattr(paths, "PATH_WALK_MIN", 3)
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd="/w")
    first = [sessions.append_entry(session, user(f"m{i}")) for i in range(6)]
    assert [e["id"] for e in paths.load_path(session)] == [e.pi_id for e in first]
    sessions.set_leaf(session, first[2].pi_id)
    branch = sessions.append_entry(session, assistant("branch"))
    more = sessions.append_entry(session, user("more"))
    session.refresh_from_db()
    expected = [e.pi_id for e in first[:3]] + [branch.pi_id, more.pi_id]
    assert [e["id"] for e in paths.load_path(session)] == expected
    assert [e["id"] for e in paths.load_path(session, first[-1].pi_id)] == [e.pi_id for e in first]
    entries = paths.load_all_entries(session)
    assert paths.load_context(session) == build_session_context(entries, more.pi_id)


@pytest.mark.django_db
@pytest.mark.parametrize("walk_min", [5000, 3])
def test_load_path_tail_is_the_end_of_the_path(make_user, monkeypatch, walk_min):
    monkeypatch.setattr(paths, "PATH_WALK_MIN", walk_min)
    session = sessions.create_session(owner=make_user(), cwd="/w")
    assert paths.load_path_tail(session, 3) == (0, [])
    first = sessions.append_entry(session, user("root"))
    for i in range(6):
        sessions.append_entry(session, assistant(f"a{i}") if i % 2 else user(f"u{i}"))
    sessions.set_leaf(session, first.pi_id)
    sessions.append_entry(session, assistant("branch"))
    session.refresh_from_db()
    path = paths.load_path(session)
    assert paths.load_path_tail(session, 1) == (len(path) - 1, path[-1:])
    assert paths.load_path_tail(session, 50) == (0, path)


@pytest.mark.django_db
@pytest.mark.parametrize("name", session_names())
def test_load_context_equals_pi_1_6_0_at_every_listed_node(name, make_user):
    data, entries, record = session(name)
    report = import_jsonl_stream(as_file(data), make_user("pi16"), filename=name)
    stored = report.session
    assert report.entries_added == len(entries)
    for expected in record["contexts"]:
        assert paths.load_context(stored, expected["leafId"]) == expected["context"], expected[
            "leafId"
        ]
    # The session's own leaf (pi's last entry) gives the leaf context too.
    leaf_context = next(c for c in record["contexts"] if c["leafId"] == record["leafId"])
    assert paths.load_context(stored) == leaf_context["context"]


@pytest.mark.django_db
@pytest.mark.parametrize("walk_min", [5000, 3])
@pytest.mark.parametrize("name", session_names())
def test_settings_path_gives_pi_1_6_0_model_and_thinking_level(
    name, walk_min, make_user, monkeypatch
):
    """The few entries load_settings_path reads set the same model and thinking level as
    the whole context at every listed node (one recursive query, and the big-session walk)."""
    from sessions_app.core.messages import context_from_path

    monkeypatch.setattr(paths, "PATH_WALK_MIN", walk_min)
    data, entries, record = session(name)
    stored = import_jsonl_stream(as_file(data), make_user("pi16"), filename=name).session
    missing = object()
    for expected in record["contexts"]:
        settings_path = paths.load_settings_path(stored, expected["leafId"])
        assert len(settings_path) <= 2
        got = context_from_path(settings_path)
        assert got["model"] == expected["context"]["model"], expected["leafId"]
        assert got.get("thinkingLevel", missing) == expected["context"].get(
            "thinkingLevel", missing
        ), expected["leafId"]
