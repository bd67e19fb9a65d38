"""services/review_queues.py: building a queue from a filter, handing items out one
reviewer at a time (also to two reviewers at once, from two threads), lapsed holds,
skipping, several reviews per answer, and assignment."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from sessions_app.core.errors import ServiceError
from sessions_app.models import ReviewItem, SessionShare, Team, TeamMembership
from sessions_app.selectors.sessions import ListFilters
from sessions_app.services import review_queues, scores, sessions
from tests.support.branchy_session import assistant, user

pytestmark = [pytest.mark.embedded]


def fan_session(owner, answers: int, name="fan"):
    """One question answered `answers` times, each answer its own branch."""
    session = sessions.create_session(owner=owner, cwd="/work/fan", name=name)
    root = sessions.append_entry(session, user("Which parser?"), actor=owner).pi_id
    for n in range(answers):
        sessions.append_entry(session, assistant(f"answer {n}"), actor=owner, parent_pi_id=root)
    session.refresh_from_db()
    return session


def team_of(make_user, answers=5, per_item=1):
    owner, admin, r1, r2, viewer = (make_user() for _ in range(5))
    team = Team.objects.create(name="graders")
    for member, role in ((admin, "admin"), (r1, "reviewer"), (r2, "reviewer"), (viewer, "viewer")):
        TeamMembership.objects.create(team=team, user=member, role=role)
    session = fan_session(owner, answers)
    SessionShare.objects.create(session=session, team=team, role="viewer")
    config = scores.create_config(team, actor=admin, name="ok", kind="boolean")
    queue = review_queues.create_queue(
        team,
        actor=admin,
        name="all answers",
        filters=ListFilters(),
        scope="branch_ends",
        reviews_per_item=per_item,
    )
    return locals()


@pytest.mark.django_db
def test_a_queue_holds_the_answers_its_filter_selects(make_user):
    w = team_of(make_user, answers=4)
    assert w["queue"].items.count() == 4
    other = fan_session(w["owner"], 2, name="elsewhere")
    SessionShare.objects.create(session=other, team=w["team"], role="viewer")
    leaf = review_queues.create_queue(
        w["team"], actor=w["admin"], name="leaves", filters=ListFilters(query="elsewhere")
    )
    assert list(leaf.items.values_list("entry_id", flat=True)) == [other.leaf_id]
    for bad in ({"name": ""}, {"reviews_per_item": 9}, {"filters": ListFilters(query="nothing")}):
        with pytest.raises(ServiceError):
            review_queues.create_queue(
                w["team"], actor=w["admin"], **{"name": "q", "filters": ListFilters(), **bad}
            )
    with pytest.raises(ServiceError) as refused:
        review_queues.create_queue(w["team"], actor=w["r1"], name="q", filters=ListFilters())
    assert refused.value.status == 403


@pytest.mark.django_db
def test_each_reviewer_gets_a_different_item_and_keeps_it_until_scored(make_user):
    w = team_of(make_user, answers=3)
    queue, r1, r2 = w["queue"], w["r1"], w["r2"]
    first = review_queues.take_next(queue, actor=r1)
    assert review_queues.take_next(queue, actor=r1) == first  # one at a time
    second = review_queues.take_next(queue, actor=r2)
    assert second != first
    with pytest.raises(ServiceError):
        review_queues.score_item(queue, first.pk, w["config"].pk, "yes", actor=r2)
    done = review_queues.score_item(queue, first.pk, w["config"].pk, "yes", actor=r1)
    assert done.done_by == r1 and done.held_by is None
    third = review_queues.take_next(queue, actor=r1)
    assert third not in (first, second)
    assert review_queues.take_next(queue, actor=r1) == third
    with pytest.raises(ServiceError) as viewer:
        review_queues.take_next(queue, actor=w["viewer"])
    assert viewer.value.status == 403


@pytest.mark.django_db
def test_a_lapsed_hold_goes_back_to_the_queue_and_a_skip_goes_to_its_end(make_user, settings):
    w = team_of(make_user, answers=2)
    queue, r1, r2 = w["queue"], w["r1"], w["r2"]
    held = review_queues.take_next(queue, actor=r1)
    ReviewItem.objects.filter(pk=held.pk).update(
        held_at=timezone.now() - timedelta(seconds=settings.PIWEB_REVIEW_HOLD_SECONDS + 1)
    )
    assert review_queues.take_next(queue, actor=r2) == held  # the first free item again
    other = review_queues.take_next(queue, actor=r1)
    assert other != held
    review_queues.skip(queue, other.pk, actor=r1)
    other.refresh_from_db()
    assert other.held_by is None and other.position > held.position


@pytest.mark.django_db
def test_several_reviews_per_answer_never_twice_by_the_same_reviewer(make_user):
    w = team_of(make_user, answers=1, per_item=2)
    queue, r1, r2 = w["queue"], w["r1"], w["r2"]
    a = review_queues.take_next(queue, actor=r1)
    review_queues.score_item(queue, a.pk, w["config"].pk, "no", actor=r1)
    assert review_queues.take_next(queue, actor=r1) is None  # the other slot is not for r1
    b = review_queues.take_next(queue, actor=r2)
    assert b.entry_id == a.entry_id and b.slot != a.slot


@pytest.mark.django_db
def test_admins_assign_items_in_turn(make_user):
    w = team_of(make_user, answers=4)
    queue = w["queue"]
    names = [w["r1"].username, w["r2"].username]
    assert review_queues.assign(queue, names, actor=w["admin"]) == 4
    assert ReviewItem.objects.filter(assigned_to=w["r1"]).count() == 2
    assert review_queues.take_next(queue, actor=w["r1"]).assigned_to == w["r1"]
    with pytest.raises(ServiceError):
        review_queues.assign(queue, [w["viewer"].username], actor=w["admin"])


@pytest.mark.django_db
def test_admins_assign_one_item_and_only_its_assignee_gets_it(make_user):
    w = team_of(make_user, answers=3)
    queue, admin, r1, r2 = w["queue"], w["admin"], w["r1"], w["r2"]
    first, second, third = ReviewItem.objects.filter(queue=queue).order_by("position")
    with pytest.raises(ServiceError) as refused:
        review_queues.assign_item(queue, first.pk, r2.username, actor=r1)
    assert refused.value.status == 403
    with pytest.raises(ServiceError, match="reviewer role"):
        review_queues.assign_item(queue, first.pk, w["viewer"].username, actor=admin)
    assert review_queues.assign_item(queue, first.pk, r2.username, actor=admin).assigned_to == r2
    # r1 is passed the first item by: it is r2's
    assert review_queues.take_next(queue, actor=r1).pk == second.pk
    with pytest.raises(ServiceError, match="reviewing this item now"):
        review_queues.assign_item(queue, second.pk, r2.username, actor=admin)
    assert review_queues.take_next(queue, actor=r2).pk == first.pk
    review_queues.score_item(queue, second.pk, w["config"].pk, "yes", actor=r1)
    assert review_queues.take_next(queue, actor=r1).pk == third.pk  # never the first
    review_queues.score_item(queue, third.pk, w["config"].pk, "no", actor=r1)
    assert review_queues.take_next(queue, actor=r1) is None
    with pytest.raises(ServiceError, match="reviewed already"):
        review_queues.assign_item(queue, third.pk, r2.username, actor=admin)
    review_queues.skip(queue, first.pk, actor=r2)
    review_queues.assign_item(queue, first.pk, "", actor=admin)  # back to whoever is next
    assert review_queues.take_next(queue, actor=r1).pk == first.pk


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_at_once_over_50_items_none_twice_none_lost(make_user):
    w = team_of(make_user, answers=50)
    queue, config = w["queue"], w["config"]
    got = {w["r1"].pk: [], w["r2"].pk: []}
    errors = []
    start = threading.Barrier(2)

    def review(reviewer):
        try:
            start.wait()
            while (item := review_queues.take_next(queue, actor=reviewer)) is not None:
                got[reviewer.pk].append(item.pk)
                review_queues.score_item(queue, item.pk, config.pk, "yes", actor=reviewer)
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=review, args=(w[r],)) for r in ("r1", "r2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    handed = got[w["r1"].pk] + got[w["r2"].pk]
    assert len(handed) == len(set(handed)) == 50  # none twice, none lost
    if connection.vendor == "postgresql":
        # both took part (row locks let them interleave; SQLite's single write lock may
        # hand every item to whichever thread holds it, so there only the above holds)
        assert got[w["r1"].pk] and got[w["r2"].pk]
    assert ReviewItem.objects.filter(queue=queue, done_at=None).count() == 0
