"""models.py: an entry's stored line is its only copy (the payload is read from it)."""

from __future__ import annotations

import pytest

from sessions_app.core.jsonl import serialize_entry
from sessions_app.models import Entry
from sessions_app.services import sessions
from tests.support.branchy_session import user

pytestmark = [pytest.mark.embedded]


@pytest.mark.django_db
def test_an_entry_is_stored_once_as_its_line(make_user):
    """`line` is the only stored copy: `payload` is parsed from it, and setting the
    payload rewrites the line in JSON.stringify form."""
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd="/w")
    entry = sessions.append_entry(session, user("stored once"))
    assert "payload" not in {f.column for f in Entry._meta.concrete_fields}
    stored = Entry.objects.get(pk=entry.pk)
    assert stored.line == serialize_entry(stored.payload)
    assert stored.payload["message"]["content"] == "stored once"
    changed = {**stored.payload, "message": {**stored.payload["message"], "content": "x y"}}
    stored.payload = changed
    assert stored.line == serialize_entry(changed)
    stored.save(update_fields=["line"])
    again = Entry.objects.get(pk=entry.pk)
    assert again.payload["message"]["content"] == "x y"
    again.line = serialize_entry({**changed, "type": "custom"})  # a new line, a new payload
    assert again.payload["type"] == "custom"
