"""selectors/entries.py: entry lookups stay inside their session; the leaf id."""

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
