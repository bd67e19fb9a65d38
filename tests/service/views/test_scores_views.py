"""The score views (sessions_app/views/scores.py): an entry's scores and controls, giving
and taking back a score, a team's score configs on the teams page; and the badges of the
tree, the chat and a share link that says so."""

import pytest

from sessions_app.models import Score, ScoreConfig, SessionShare, Team, TeamMembership
from sessions_app.services import scores, sharing
from tests.support.access import Call, each, login_redirects, post, statuses
from tests.support.branchy_session import build_branchy_session
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def team_world(make_user):
    owner, admin, reviewer, viewer, stranger = (make_user() for _ in range(5))
    team = Team.objects.create(name="graders")
    for user, role in ((admin, "admin"), (reviewer, "reviewer"), (viewer, "viewer")):
        TeamMembership.objects.create(team=team, user=user, role=role)
    data = build_branchy_session(owner)
    SessionShare.objects.create(session=data.session, team=team, role="viewer")
    config = scores.create_config(
        team, actor=admin, name="quality", kind="number", min_value=1, max_value=5
    )
    return locals() | {
        "session": data.session,
        "entry": data.ids["b3"],
    }  # the leaf: the chat shows it


def calls(w):
    return [
        Call("entry_scores", args=(w["entry"],)),
        post("score_set", {"config": w["config"].pk, "value": "4"}, args=(w["entry"],)),
    ]


def test_it_requires_login(team_world):
    w = team_world
    assert login_redirects(calls(w), w["session"]) == each(calls(w), "/login/")


def test_it_requires_a_share_of_the_session(team_world):
    w = team_world
    assert statuses(client_for(w["stranger"]), calls(w), w["session"]) == each(calls(w), 404)


def test_it_requires_reviewer_rights_to_score(team_world):
    w = team_world
    viewer = client_for(w["viewer"])
    assert statuses(viewer, calls(w), w["session"]) == {"entry_scores": 200, "score_set": 403}
    page = viewer.get(f"/s/{w['session'].pi_id}/scores/{w['entry']}/").content.decode()
    assert "score-form" not in page
    assert not Score.objects.exists()


def test_a_reviewer_scores_from_the_entry_and_sees_the_badge_in_tree_and_chat(team_world):
    w = team_world
    client, sid = client_for(w["reviewer"]), w["session"].pi_id
    form = client.get(f"/s/{sid}/scores/{w['entry']}/").content.decode()
    assert 'class="score-form"' in form and 'max="5"' in form
    answer = client.post(
        f"/s/{sid}/scores/{w['entry']}/set/",
        {"config": w["config"].pk, "value": "4", "comment": "tidy"},
        HTTP_HX_REQUEST="true",
    )
    assert answer.status_code == 200
    assert "quality: 4" in answer.content.decode() and "tidy" in answer.content.decode()
    bad = client.post(
        f"/s/{sid}/scores/{w['entry']}/set/", {"config": w["config"].pk, "value": "9"}
    )
    assert bad.status_code == 400 and Score.objects.get().value == 4
    tree = client.get(f"/s/{sid}/tree/").content.decode()
    chat = client.get(f"/s/{sid}/chat/transcript/").content.decode()
    for page in (tree, chat):
        assert 'data-score-config="quality"' in page
    mine = Score.objects.get()
    gone = client.post(f"/s/{sid}/scores/{w['entry']}/{mine.pk}/delete/")
    assert gone.status_code == 200 and not Score.objects.exists()


def test_a_share_link_shows_scores_only_when_it_says_so(team_world):
    w = team_world
    scores.set_score(w["session"], w["entry"], w["config"].pk, "2", actor=w["reviewer"])
    quiet = sharing.create_link(w["session"], actor=w["owner"], leaf_pi_id=w["entry"])
    loud = sharing.create_link(
        w["session"], actor=w["owner"], leaf_pi_id=w["entry"], show_scores=True
    )
    visitor = client_for(w["stranger"])
    assert 'data-score-config="quality"' not in visitor.get(f"/l/{quiet.token}/").content.decode()
    assert 'data-score-config="quality"' in visitor.get(f"/l/{loud.token}/").content.decode()


def test_admins_manage_the_teams_score_configs_on_the_teams_page(team_world):
    w = team_world
    team = w["team"]
    url = f"/teams/{team.pk}/scores/new/"
    data = {"name": "tone", "kind": "category", "categories": "calm, rude"}
    refused = client_for(w["reviewer"]).post(url, data, follow=True)
    assert "Only an admin" in refused.content.decode()
    admin = client_for(w["admin"])
    page = admin.post(url, data, follow=True).content.decode()
    assert "Added the score tone" in page and "calm, rude" in page
    tone = ScoreConfig.objects.get(name="tone")
    edit = f"/teams/{team.pk}/scores/{tone.pk}/edit/"
    changed = {"name": "Tone", "categories": "calm, rude, terse", "description": "how it reads"}
    assert (
        "Only an admin"
        in client_for(w["reviewer"]).post(edit, changed, follow=True).content.decode()
    )
    assert ScoreConfig.objects.get(pk=tone.pk).name == "tone"
    page = admin.post(edit, changed, follow=True).content.decode()
    assert "Saved the score Tone" in page and "calm, rude, terse" in page and "how it reads" in page
    assert 'action="' + edit + '"' in page  # the edit form, filled in, on the teams page
    assert ScoreConfig.objects.get(pk=tone.pk).categories == ["calm", "rude", "terse"]
    bad = admin.post(edit, {"name": "Tone", "categories": "calm"}, follow=True).content.decode()
    assert "2 to 9 categories" in bad
    admin.post(f"/teams/{team.pk}/scores/{tone.pk}/delete/")
    assert not ScoreConfig.objects.filter(pk=tone.pk).exists()
    assert client_for(w["stranger"]).post(url, data).status_code == 404
