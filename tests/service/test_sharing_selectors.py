"""selectors/sharing.py: the teams a user may share with, a link's state, and what a link
shows: the entries of its branch (tests/support/branchy_session.py, links made at the inner
node a2, with r2 and a3 below it) and whether an entry appended later is among them."""

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import ShareLink, Team, TeamMembership
from sessions_app.selectors.sharing import (
    link_covers_new_entry,
    link_state,
    link_visible_entry_ids,
    teams_for_sharing,
)
from sessions_app.services import sessions, sharing
from tests.support.branchy_session import assistant, build_branchy_session

pytestmark = pytest.mark.django_db

PATH_KEYS = ("u1", "a1", "r1", "a2")
BELOW_KEYS = ("r2", "a3")


@pytest.fixture
def data(make_user):
    return build_branchy_session(make_user("owner"))


def link_at(data, scope=ShareLink.Scope.PATH):
    return sharing.create_link(
        data.session, actor=data.session.owner, leaf_pi_id=data.ids["a2"], scope=scope
    )


@pytest.mark.embedded  # (raw recursive SQL: PostgreSQL and SQLite)
def test_a_path_link_never_grows_and_a_subtree_link_grows_below_its_node(data):
    ids = data.ids
    path_link, subtree_link = link_at(data), link_at(data, scope=ShareLink.Scope.SUBTREE)
    path = {ids[k] for k in PATH_KEYS}
    assert link_visible_entry_ids(path_link) == path
    assert link_visible_entry_ids(subtree_link) == path | {ids[k] for k in BELOW_KEYS}
    below = sessions.append_entry(data.session, assistant("Later."), parent_pi_id=ids["a3"]).pi_id
    elsewhere = sessions.append_entry(data.session, assistant("B again."), parent_pi_id=ids["b3"])
    fork = sessions.append_entry(data.session, assistant("Fork."), parent_pi_id=ids["a1"]).pi_id
    assert link_visible_entry_ids(path_link) == path
    assert below in link_visible_entry_ids(subtree_link)
    assert not link_covers_new_entry(path_link, below)
    assert link_covers_new_entry(subtree_link, below)
    assert link_covers_new_entry(subtree_link, ids["a3"])
    for link in (path_link, subtree_link):
        assert not link_covers_new_entry(link, elsewhere.pi_id)
        assert not link_covers_new_entry(link, fork)  # forked above the node
        assert fork not in link_visible_entry_ids(link)


def test_a_link_is_active_until_it_expires_or_is_revoked(data):
    link = link_at(data)
    assert link_state(link) == "active"
    link.expires_at = timezone.now() - timedelta(seconds=1)
    assert link_state(link) == "expired"
    link.revoked_at = timezone.now()
    assert link_state(link) == "revoked"


def test_a_user_shares_with_their_own_teams_and_a_superuser_with_all(make_user):
    member, outsider = make_user(), make_user()
    root = make_user(is_superuser=True)
    mine = Team.objects.create(name="b mine")
    other = Team.objects.create(name="a other")
    TeamMembership.objects.create(team=mine, user=member)
    assert list(teams_for_sharing(member)) == [mine]
    assert list(teams_for_sharing(outsider)) == []
    assert list(teams_for_sharing(root)) == [other, mine]
