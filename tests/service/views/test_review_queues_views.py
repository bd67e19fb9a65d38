"""The review queue views (sessions_app/views/review_queues.py): the team's queues page,
building and assigning a queue (admins), reviewer mode's item, score and skip. The
handing out itself is tested in test_review_queues.py, the keys in
tests/e2e/test_review_mode_browser.py."""

import json

import pytest

from sessions_app.models import ReviewItem, ReviewQueue, Score, SessionShare, Team, TeamMembership
from sessions_app.selectors.sessions import ListFilters
from sessions_app.services import review_queues, scores
from tests.support.branchy_session import build_branchy_session
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def world(make_user):
    owner, admin, reviewer, viewer, stranger = (make_user() for _ in range(5))
    team = Team.objects.create(name="graders")
    for member, role in ((admin, "admin"), (reviewer, "reviewer"), (viewer, "viewer")):
        TeamMembership.objects.create(team=team, user=member, role=role)
    data = build_branchy_session(owner, name="Parser fix")
    SessionShare.objects.create(session=data.session, team=team, role="viewer")
    config = scores.create_config(team, actor=admin, name="ok", kind="boolean")
    queue = review_queues.create_queue(
        team, actor=admin, name="ends", filters=ListFilters(), scope="branch_ends"
    )
    return locals()


def test_it_requires_login(world):
    for url in (f"/teams/{world['team'].pk}/queues/", f"/queues/{world['queue'].pk}/review/"):
        response = client_for(world["stranger"]).get(url)
        assert response.status_code == 404
        from django.test import Client

        assert "/login/" in Client().get(url)["Location"]


def test_it_requires_a_share_of_the_session(world):
    """A queue is its team's: outsiders get 404, a team viewer cannot review (403)."""
    url = f"/queues/{world['queue'].pk}/review/"
    assert client_for(world["stranger"]).get(url).status_code == 404
    assert client_for(world["viewer"]).get(url).status_code == 403
    assert not ReviewItem.objects.exclude(held_by=None).exists()


def test_admins_build_and_assign_queues_from_the_page(world):
    team, admin = world["team"], world["admin"]
    client = client_for(admin)
    page = client.post(
        f"/teams/{team.pk}/queues/new/",
        {"name": "leaves", "scope": "leaf", "q": "Parser"},
        follow=True,
    ).content.decode()
    assert "Created the queue leaves (1 items)" in page and "q: Parser" in page
    built = ReviewQueue.objects.get(name="leaves")
    assert built.filters == {"q": "Parser"}
    client.post(f"/queues/{built.pk}/assign/", {"usernames": world["reviewer"].username})
    assert built.items.get().assigned_to == world["reviewer"]
    refused = client_for(world["reviewer"]).post(
        f"/teams/{team.pk}/queues/new/", {"name": "x", "scope": "leaf"}
    )
    assert refused.status_code == 403


def test_admins_assign_one_item_from_the_items_page(world):
    queue, admin, reviewer = world["queue"], world["admin"], world["reviewer"]
    first = queue.items.order_by("position").first()
    url = f"/queues/{queue.pk}/items/"
    page = client_for(admin).get(url).content.decode()
    assert f'action="/queues/{queue.pk}/items/{first.pk}/assign/"' in page
    assert f'<option value="{reviewer.username}"' in page  # the reviewers are offered
    assert f'<option value="{world["viewer"].username}"' not in page
    assert "/assign/" not in client_for(reviewer).get(url).content.decode()  # a list only
    answer = client_for(admin).post(
        f"/queues/{queue.pk}/items/{first.pk}/assign/",
        {"username": reviewer.username, "page": "1"},
        follow=True,
    )
    assert f"goes to {reviewer.username}" in answer.content.decode()
    first.refresh_from_db()
    assert first.assigned_to == reviewer
    refused = client_for(reviewer).post(
        f"/queues/{queue.pk}/items/{first.pk}/assign/", {"username": ""}
    )
    assert refused.status_code == 403
    assert client_for(world["stranger"]).get(url).status_code == 404
    first.refresh_from_db()
    assert first.assigned_to == reviewer


def test_reviewer_mode_scores_and_skips(world):
    queue, client = world["queue"], client_for(world["reviewer"])
    page = client.get(f"/queues/{queue.pk}/review/").content.decode()
    assert "0 of 2 reviewed" in page and "What came before" in page and 'data-key="1"' in page
    item = ReviewItem.objects.get(held_by=world["reviewer"])
    skipped = client.post(f"/queues/{queue.pk}/items/{item.pk}/skip/")
    assert skipped.status_code == 302
    client.get(f"/queues/{queue.pk}/review/")
    item = ReviewItem.objects.get(held_by=world["reviewer"])
    scored = client.post(
        f"/queues/{queue.pk}/items/{item.pk}/score/",
        {"config": world["config"].pk, "value": "yes"},
    )
    assert scored.status_code == 302 and scored["Location"].endswith("/review/")
    assert Score.objects.get().author == world["reviewer"]
    back = client.get(f"/queues/{queue.pk}/review/?item={item.pk}").content.decode()
    assert 'class="score-badge">yes' in back
    other = client_for(world["admin"]).post(
        f"/queues/{queue.pk}/items/{item.pk}/score/", {"config": world["config"].pk, "value": "no"}
    )
    assert other.status_code == 409


def test_the_queue_dataset_downloads_for_reviewers(world):
    queue, entry = world["queue"], world["queue"].items.first().entry
    scores.set_score(entry.session, entry.pi_id, world["config"].pk, "yes", actor=world["reviewer"])
    url = f"/queues/{queue.pk}/dataset/"
    response = client_for(world["reviewer"]).get(url, {"format": "finetune"})
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment")
    [line] = b"".join(response.streaming_content).decode().splitlines()
    assert json.loads(line)["messages"][-1]["role"] == "assistant"
    chat = client_for(world["admin"]).get(url, {"min": "ok=1"})
    assert json.loads(b"".join(chat.streaming_content))["scores"][0]["label"] == "yes"
    assert client_for(world["admin"]).get(url, {"min": "ok"}).status_code == 400
    assert client_for(world["viewer"]).get(url).status_code == 403
    assert client_for(world["stranger"]).get(url).status_code == 404


def test_a_filter_dataset_downloads_from_the_queues_page(world, make_user):
    team, config, reviewer = world["team"], world["config"], world["reviewer"]
    other = build_branchy_session(world["owner"], cwd="/work/project-beta", name="Lexer tune")
    SessionShare.objects.create(session=other.session, team=team, role="viewer")
    for data in (world["data"], other):
        scores.set_score(data.session, data.ids["b3"], config.pk, "yes", actor=reviewer)
    scores.set_score(
        world["data"].session, world["data"].ids["a3"], config.pk, "no", actor=reviewer
    )
    page = client_for(reviewer).get(f"/teams/{team.pk}/queues/").content.decode()
    assert f'action="/teams/{team.pk}/dataset/"' in page and 'name="format"' in page
    url = f"/teams/{team.pk}/dataset/"
    response = client_for(reviewer).get(url, {"project": "/work/project-alpha"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/jsonl")
    assert response["Content-Disposition"].startswith("attachment")
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert {row["session"] for row in rows} == {world["data"].session.pi_id}
    assert sorted(row["entry"] for row in rows) == sorted(
        [world["data"].ids["a3"], world["data"].ids["b3"]]
    )
    everything = client_for(world["admin"]).get(url, {"min": "ok=1"})
    kept = [json.loads(line) for line in b"".join(everything.streaming_content).splitlines()]
    assert {row["session"] for row in kept} == {world["data"].session.pi_id, other.session.pi_id}
    assert all(row["scores"][0]["label"] == "yes" for row in kept)
    tuned = client_for(reviewer).get(url, {"project": "/work/project-beta", "format": "finetune"})
    [line] = b"".join(tuned.streaming_content).decode().splitlines()
    assert set(json.loads(line)) <= {"messages", "tools", "parallel_tool_calls"}
    assert client_for(reviewer).get(url, {"from": "not a date"}).status_code == 400
    assert client_for(world["viewer"]).get(url).status_code == 403
    assert client_for(world["stranger"]).get(url).status_code == 404
    assert client_for(make_user()).get(f"/teams/{team.pk}/queues/").status_code == 404
