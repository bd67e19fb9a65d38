"""The header's context gauge from the path's columns (selectors/paths.load_path_gauge_rows
and core.context_chart.context_now_from_rows) equals the whole context timeline's last
figures at every node, on the one-query path and the big-session walk."""

from __future__ import annotations

import pytest

from sessions_app.core.context_chart import context_now_from_rows, context_timeline
from sessions_app.models import Entry
from sessions_app.selectors import paths
from sessions_app.services import sessions
from sessions_app.services.importer import import_jsonl_stream
from tests.support.pi16_sessions import session as pi16_session
from tests.support.pi16_sessions import session_names
from tests.support.pi_files import as_file
from tests.support.usage_data import assistant, usage

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


def _user(text):
    return {"type": "message", "message": {"role": "user", "content": text}}


def _expected(stored) -> dict:
    whole = context_timeline(paths.load_path(stored))
    return {"current": whole["current"], "model": whole["model"]}


def _from_rows(stored) -> tuple[dict, list[int]]:
    """The gauge from the rows, and the primary keys whose payloads it read."""
    read: list[int] = []

    def load(pks):
        read.extend(pks)
        return paths.load_payloads(pks)

    return context_now_from_rows(paths.load_path_gauge_rows(stored), load), read


def _check_every_node(stored) -> None:
    nodes = list(Entry.objects.filter(session=stored).order_by("seq").values_list("pk", flat=True))
    assert nodes
    for pk in nodes:
        stored.leaf_id = pk
        assert _from_rows(stored)[0] == _expected(stored), pk


@pytest.mark.parametrize("walk_min", [5000, 3])
def test_every_kind_of_entry_at_every_node(make_user, monkeypatch, walk_min):
    """Usage, aborted turns that carry usage, a compaction that keeps earlier entries, an
    excluded bash run, custom messages, branch summaries, model changes, the word "usage"
    in a user's text, and rows written before pi_tokens existed (null)."""
    monkeypatch.setattr(paths, "PATH_WALK_MIN", walk_min)
    stored = sessions.create_session(owner=make_user(), cwd="/w")

    def add(payload):
        return sessions.append_entry(stored, payload)

    add(_user("x" * 400))
    add({k: v for k, v in assistant("", "p", "m", None).items() if k != "id"})
    kept = add(_user('the "usage" and "model" of ' + "y" * 80))
    add({k: v for k, v in assistant("", "p", "m", usage(700, 100, 0, 0, total=800)).items()})
    add(
        {
            k: v
            for k, v in assistant("", "p", "m2", usage(5, 5), stopReason="aborted").items()
            if k != "id"
        }
    )
    add(
        {
            "type": "message",
            "message": {
                "role": "bashExecution",
                "command": "ls",
                "output": "o" * 90,
                "excludeFromContext": True,
            },
        }
    )
    add({"type": "message", "message": {"role": "bashExecution", "command": "pwd", "output": "/"}})
    add({"type": "custom_message", "customType": "note", "content": "c" * 60, "display": True})
    add({"type": "branch_summary", "fromId": kept.pi_id, "summary": "b" * 44})
    add({"type": "model_change", "provider": "q", "modelId": "n"})
    null_row = add(_user("z" * 33))
    Entry.objects.filter(pk=null_row.pk).update(pi_tokens=None)
    add({"type": "compaction", "summary": "s" * 40, "firstKeptEntryId": kept.pi_id})
    add(_user("w" * 20))
    add({k: v for k, v in assistant("", "p", "m3", None).items() if k != "id"})
    add({"type": "compaction", "summary": "t" * 8, "firstKeptEntryId": "nowhere"})
    add(_user("v" * 12))
    stored.refresh_from_db()
    _check_every_node(stored)


@pytest.mark.parametrize("walk_min", [5000, 3])
@pytest.mark.parametrize("name", session_names())
def test_pi_1_6_0_sessions_at_every_node(name, walk_min, make_user, monkeypatch):
    monkeypatch.setattr(paths, "PATH_WALK_MIN", walk_min)
    data, _entries, _record = pi16_session(name)
    stored = import_jsonl_stream(as_file(data), make_user("pi16"), filename=name).session
    _check_every_node(stored)


def test_a_long_path_without_usage_reads_no_plain_message(make_user):
    """The worst case of the gauge (no turn with usage, no model named): the figure is
    the sum of the stored estimates; no payload of a plain message is read."""
    stored = sessions.create_session(owner=make_user(), cwd="/w")
    for i in range(40):
        sessions.append_entry(stored, _user(f"message {i} " * (i + 1)))
    sessions.append_entry(stored, {"type": "custom_message", "customType": "n", "content": "abc"})
    stored.refresh_from_db()
    got, read = _from_rows(stored)
    assert got == _expected(stored) and got["current"] > 0
    assert read == [stored.leaf_id]
