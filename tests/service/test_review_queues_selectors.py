"""selectors/review_queues.py: the answers a filter selects, the progress of a queue and
what a reviewer may take (the handing out itself: test_review_queues.py)."""

import pytest

from sessions_app.models import ReviewQueue, SessionShare, Team, TeamMembership
from sessions_app.selectors import review_queues as read
from sessions_app.selectors.sessions import ListFilters
from sessions_app.services import review_queues, scores
from tests.support.branchy_session import build_branchy_session

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


def test_answers_follow_the_scope_the_filter_and_the_teams_shares(make_user):
    owner, admin = make_user(), make_user()
    team = Team.objects.create(name="t")
    TeamMembership.objects.create(team=team, user=admin, role="admin")
    data = build_branchy_session(owner, name="Parser fix")
    build_branchy_session(owner, name="not shared")
    SessionShare.objects.create(session=data.session, team=team, role="viewer")
    ends = read.answers_for(admin, team, ListFilters(), ReviewQueue.Scope.BRANCH_ENDS)
    entry_pks = [pk for _, pk in ends]
    by_pk = {e.pk: e.pi_id for e in data.session.entries.all()}
    assert [by_pk[pk] for pk in entry_pks] == [data.ids["a3"], data.ids["b3"]]
    leaves = read.answers_for(admin, team, ListFilters(), ReviewQueue.Scope.LEAF)
    assert [by_pk[pk] for _, pk in leaves] == [data.ids["b3"]]
    assert read.answers_for(admin, team, ListFilters(query="zzz"), "leaf") == []


def test_progress_and_the_held_item(make_user):
    owner, admin = make_user(), make_user()
    team = Team.objects.create(name="t")
    TeamMembership.objects.create(team=team, user=admin, role="admin")
    data = build_branchy_session(owner)
    SessionShare.objects.create(session=data.session, team=team, role="viewer")
    config = scores.create_config(team, actor=admin, name="ok", kind="boolean")
    queue = review_queues.create_queue(
        team, actor=admin, name="q", filters=ListFilters(), scope="branch_ends"
    )
    assert read.progress(queue, admin).percent == 0
    item = review_queues.take_next(queue, actor=admin)
    assert read.held_item(queue, admin) == item
    assert list(read.free_items(queue, admin)) == [i for i in queue.items.all() if i != item]
    review_queues.score_item(queue, item.pk, config.pk, "yes", actor=admin)
    done = read.progress(queue, admin)
    assert (done.total, done.done, done.mine, done.percent) == (2, 1, 1, 50)
    assert read.reviewed_items(queue, admin) == [item.pk]
    [listed] = read.team_queues(team)
    assert (listed.total, listed.done) == (2, 1)
    assert [c.given.value for c in read.item_scores(queue, item, admin)] == [1.0]
