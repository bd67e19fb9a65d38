"""services/scores.py: admins manage a team's score configs; reviewers and up score the
sessions shared with the team (even on a viewer share); viewers and outsiders cannot."""

import pytest

from sessions_app.core.errors import ServiceError
from sessions_app.models import Activity, Score, ScoreConfig, SessionShare, Team, TeamMembership
from sessions_app.services import scores
from tests.support.branchy_session import build_branchy_session

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


@pytest.fixture
def world(make_user):
    owner, admin, reviewer, viewer, editor = (make_user() for _ in range(5))
    team = Team.objects.create(name="reviewers")
    for user, role in ((admin, "admin"), (reviewer, "reviewer"), (viewer, "viewer")):
        TeamMembership.objects.create(team=team, user=user, role=role)
    TeamMembership.objects.create(team=team, user=editor, role="editor")
    data = build_branchy_session(owner)
    SessionShare.objects.create(session=data.session, team=team, role="viewer")
    config = scores.create_config(
        team, actor=admin, name="quality", kind="number", min_value=1, max_value=5
    )
    return locals() | {"session": data.session, "ids": data.ids}


def test_only_admins_manage_configs(world):
    team = world["team"]
    for who in ("reviewer", "viewer", "editor", "owner"):
        with pytest.raises(ServiceError) as refused:
            scores.create_config(team, actor=world[who], name="x", kind="boolean")
        assert refused.value.status == 403
    made = scores.create_config(
        team, actor=world["admin"], name="Tone", kind="category", categories="calm, rude"
    )
    assert made.categories == ["calm", "rude"]
    with pytest.raises(ServiceError, match="already has"):
        scores.create_config(team, actor=world["admin"], name="tone", kind="boolean")
    with pytest.raises(ServiceError, match="range"):
        scores.create_config(team, actor=world["admin"], name="n", kind="number", min_value=3)
    with pytest.raises(ServiceError):
        scores.delete_config(team, made.pk, actor=world["reviewer"])
    scores.delete_config(team, made.pk, actor=world["admin"])
    assert not ScoreConfig.objects.filter(pk=made.pk).exists()


def test_reviewers_and_up_score_even_on_a_viewer_share(world):
    session, entry, config = world["session"], world["ids"]["a3"], world["config"]
    for who in ("reviewer", "editor", "admin"):
        score = scores.set_score(session, entry, config.pk, "4", actor=world[who], comment="ok")
        assert (score.value, score.comment, score.author) == (4.0, "ok", world[who])
    with pytest.raises(ServiceError) as refused:
        scores.set_score(session, entry, config.pk, "4", actor=world["viewer"])
    assert refused.value.status == 403
    assert Activity.objects.filter(session=session, verb="scored").count() == 3


def test_scoring_again_replaces_ones_own_score_and_branches_are_apart(world):
    session, entry, config = world["session"], world["ids"]["a3"], world["config"]
    scores.set_score(session, entry, config.pk, "2", actor=world["reviewer"])
    scores.set_score(session, entry, config.pk, "5", actor=world["reviewer"])
    scores.set_score(session, entry, config.pk, "1", actor=world["reviewer"], target="branch")
    rows = Score.objects.filter(author=world["reviewer"]).order_by("target")
    assert [(s.target, s.value) for s in rows] == [("branch", 1.0), ("entry", 5.0)]


def test_bad_values_and_strangers_are_refused_and_nothing_is_stored(world, make_user):
    session, entry, config = world["session"], world["ids"]["a3"], world["config"]
    for value in ("0", "6", "good", ""):
        with pytest.raises(ServiceError):
            scores.set_score(session, entry, config.pk, value, actor=world["reviewer"])
    with pytest.raises(ServiceError) as missing:
        scores.set_score(session, "nope", config.pk, "3", actor=world["reviewer"])
    assert missing.value.status == 404
    with pytest.raises(ServiceError) as stranger:
        scores.set_score(session, entry, config.pk, "3", actor=make_user())
    assert stranger.value.status == 403
    with pytest.raises(ServiceError, match="not shared"):
        other = build_branchy_session(make_user()).session
        scores.set_score(other, other.leaf_pi_id, config.pk, "3", actor=world["reviewer"])
    assert not Score.objects.exists()


def test_a_score_is_taken_back_by_its_author_only(world):
    session, entry, config = world["session"], world["ids"]["a3"], world["config"]
    score = scores.set_score(session, entry, config.pk, "3", actor=world["reviewer"])
    with pytest.raises(ServiceError):
        scores.delete_score(session, score.pk, actor=world["admin"])
    scores.delete_score(session, score.pk, actor=world["reviewer"])
    assert not Score.objects.exists()


def test_admins_edit_a_config_and_no_given_score_is_lost(world):
    team, admin, config = world["team"], world["admin"], world["config"]
    session, entry = world["session"], world["ids"]["a3"]
    with pytest.raises(ServiceError) as refused:
        scores.update_config(
            team, config.pk, actor=world["reviewer"], name="x", min_value=1, max_value=9
        )
    assert refused.value.status == 403
    scores.set_score(session, entry, config.pk, "4", actor=world["reviewer"])
    with pytest.raises(ServiceError, match="outside"):  # 4 would fall out of 1-3
        scores.update_config(team, config.pk, actor=admin, name="quality", min_value=1, max_value=3)
    edited = scores.update_config(
        team, config.pk, actor=admin, name="Accuracy", min_value=0, max_value=10, description="d"
    )
    config.refresh_from_db()
    assert (config.name, config.min_value, config.max_value, config.description) == (
        "Accuracy",
        0,
        10,
        "d",
    )
    assert edited.kind == "number" and Score.objects.get(config=config).value == 4.0
    tone = scores.create_config(
        team, actor=admin, name="tone", kind="category", categories="calm, rude"
    )
    with pytest.raises(ServiceError, match="already has"):
        scores.update_config(team, tone.pk, actor=admin, name="accuracy", categories="a, b")
    scores.set_score(session, entry, tone.pk, "rude", actor=world["reviewer"])
    with pytest.raises(ServiceError, match="outside"):  # "rude" would be dropped
        scores.update_config(team, tone.pk, actor=admin, name="tone", categories="calm, kind")
    scores.update_config(team, tone.pk, actor=admin, name="tone", categories="Rude, neutral, calm")
    given = Score.objects.get(config=tone)
    assert (given.value, given.label) == (0.0, "Rude")  # the number follows its category
    with pytest.raises(ServiceError) as missing:
        scores.update_config(Team.objects.create(name="x"), tone.pk, actor=admin, name="t")
    assert missing.value.status in (403, 404)
