"""Fixtures of the view tests (one test module per module of sessions_app/views/)."""

import uuid
from types import SimpleNamespace

import pytest

from tests.support.tree_data import import_branched
from tests.support.web import share


@pytest.fixture
def shared(make_user):
    """A branched session (tests/support/tree_data.py) and everyone who may or may not
    see it: its owner, an editor and a viewer (team shares), and a stranger."""
    owner, editor, viewer, stranger = make_user(), make_user(), make_user(), make_user()
    session = import_branched(owner, "/work/project", session_id=str(uuid.uuid4()))
    share(session, editor, "editor")
    share(session, viewer, "viewer")
    return SimpleNamespace(
        session=session, owner=owner, editor=editor, viewer=viewer, stranger=stranger
    )
