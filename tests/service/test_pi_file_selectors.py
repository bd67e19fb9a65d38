"""selectors/pi_file.py: the followed pi file of a session, and what the follower looks up
about the files it knows."""

import pytest

from sessions_app.models import FollowedFile, Session
from sessions_app.selectors import pi_file
from sessions_app.services import sessions

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]

GONE = FollowedFile.State.GONE


def _file(owner, path, **fields):
    return FollowedFile.objects.create(owner=owner, path=path, **fields)


def test_the_follower_finds_known_files_by_path_inode_and_folder(make_user):
    owner = make_user()
    a = _file(owner, "/pi/a.jsonl", device=1, inode=10)
    b = _file(owner, "/pi/sub/b.jsonl", device=1, inode=11)
    _file(owner, "/pi/old.jsonl", device=1, inode=12, state=GONE)
    _file(owner, "/pipe/c.jsonl", device=2, inode=10)
    assert pi_file.followed_at("/pi/a.jsonl") == a and pi_file.followed_at("/pi/x") is None
    assert pi_file.followed_at_paths(["/pi/a.jsonl", "/pi/sub/b.jsonl", "/nope"]) == {
        "/pi/a.jsonl": a,
        "/pi/sub/b.jsonl": b,
    }
    assert pi_file.followed_with_inode(1, 10) == [a]
    assert pi_file.known_inodes({10, 12}) == {(1, 10), (1, 12), (2, 10)}
    # under the folder /pi/ (not /pipe/), not gone, in pk order, page by page
    first = pi_file.followed_page_under("/pi/", 0, 1)
    assert first == [(a.pk, "/pi/a.jsonl")]
    assert pi_file.followed_page_under("/pi/", first[-1][0], 10) == [(b.pk, "/pi/sub/b.jsonl")]


def test_sessions_whose_write_back_waits_are_due(make_user):
    owner = make_user()
    due = sessions.create_session(owner=owner, cwd="/tmp")
    sessions.create_session(owner=owner, cwd="/tmp")
    Session.objects.filter(pk=due.pk).update(settings={"pi_file": {"due": True}})
    assert pi_file.due_sessions() == [due.pk]
    assert pi_file.file_state(Session.objects.get(pk=due.pk)) == {"due": True}
