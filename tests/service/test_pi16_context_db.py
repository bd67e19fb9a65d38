"""pi 1.6.0's contexts through the database: import each of its files, then load_context."""

from __future__ import annotations

import pytest

from sessions_app.services import sessions
from sessions_app.services.importer import import_jsonl_stream
from tests.support.pi16_sessions import session, session_names
from tests.support.pi_files import as_file

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


@pytest.mark.parametrize("name", session_names())
def test_load_context_equals_pi_1_6_0_at_every_listed_node(name, make_user):
    data, entries, record = session(name)
    report = import_jsonl_stream(as_file(data), make_user("pi16"), filename=name)
    stored = report.session
    assert report.entries_added == len(entries)
    for expected in record["contexts"]:
        assert sessions.load_context(stored, expected["leafId"]) == expected["context"], expected[
            "leafId"
        ]
    # The session's own leaf (pi's last entry) gives the leaf context too.
    leaf_context = next(c for c in record["contexts"] if c["leafId"] == record["leafId"])
    assert sessions.load_context(stored) == leaf_context["context"]
