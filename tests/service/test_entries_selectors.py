"""selectors/entries.py: entry lookups stay inside their session; the leaf id."""

import json
import uuid

import pytest

from sessions_app.core.errors import NotFound
from sessions_app.selectors import entries
from sessions_app.services import sessions as sessions_service
from tests.support.tree_data import import_branched

pytestmark = pytest.mark.django_db


@pytest.fixture
def branched(make_user, workspace):
    owner = make_user("reader")
    return import_branched(owner, str(workspace), session_id=str(uuid.uuid4()))


def test_entry_lookups_stay_inside_their_session(branched, make_user):
    other = sessions_service.create_session(owner=make_user("other"), cwd="/tmp")
    entry = entries.get_entry_or_404(branched, "e0000014")
    assert entry.session_id == branched.pk and entry.pi_id == "e0000014"
    with pytest.raises(NotFound):
        entries.get_entry_or_404(other, "e0000014")
    assert entries.find_entry(branched, "") is None
    assert entries.find_entry(branched, "nope") is None
    light = entries.find_entry(branched, "e0000014", "pk", "pi_id")
    assert light.get_deferred_fields() >= {"line", "preview"}
    assert entries.entry_exists(branched, "e0000014")
    assert not entries.entry_exists(other, "e0000014") and not entries.entry_exists(branched, None)
    assert entries.entry_pk(branched, "e0000014") == entry.pk
    assert entries.entry_pk(other, "e0000014") is None


def test_the_leaf_id_lives_on_the_session(branched, make_user):
    assert branched.leaf_pi_id == branched.leaf.pi_id == "e0000014"
    empty = sessions_service.create_session(owner=make_user("empty"), cwd="/tmp")
    assert empty.leaf_pi_id is None


def test_the_reads_services_make_by_pi_id_keep_to_the_session_and_its_order(branched, make_user):
    other = sessions_service.create_session(owner=make_user("other"), cwd="/tmp")
    order = entries.pi_ids_in_order(branched)
    assert len(order) > 5 and order[-1] == "e0000014"
    some = order[1:4][::-1]  # asked out of order
    assert [json.loads(line)["id"] for line in entries.lines_in_order(branched, some)] == order[1:4]
    assert entries.last_added(branched, some) == order[3]
    assert entries.last_added(other, some) is None
    lines = entries.stored_lines(branched, [*some, "nope"])
    assert set(lines) == set(some) and json.loads(lines[some[0]])["id"] == some[0]
    assert entries.stored_lines(other, some) == {}
    # more ids than one query asks for at a time (1,000), most of them unknown
    pks = entries.pks_by_pi_id(branched, set(order) | {f"x{i}" for i in range(1500)})
    assert set(pks) == set(order)
    assert entries.pi_id_of(pks[order[0]]) == order[0]
    first = entries.entries_after(branched, -1, 2)
    rest = entries.entries_after(branched, first[-1][0], 1000)
    assert [row[2] for row in first + rest] == order
    assert [row[1] for row in first + rest] == [pks[pi_id] for pi_id in order]
