"""`manage.py export_dataset`: a queue or a team's filter as JSONL, --min-score, both
formats, to a file; bad arguments are refused with a clear message."""

import json

import pytest
from django.core.management.base import CommandError

from sessions_app.models import SessionShare, Team, TeamMembership
from sessions_app.selectors.sessions import ListFilters
from sessions_app.services import review_queues, scores
from tests.support.branchy_session import build_branchy_session
from tests.support.commands import run

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


@pytest.fixture
def team(make_user):
    owner, admin = make_user(), make_user()
    team = Team.objects.create(name="graders")
    TeamMembership.objects.create(team=team, user=admin, role="admin")
    data = build_branchy_session(owner, name="Parser fix")
    build_branchy_session(owner, name="other work")
    SessionShare.objects.create(session=data.session, team=team, role="viewer")
    config = scores.create_config(
        team, actor=admin, name="q", kind="number", min_value=1, max_value=5
    )
    scores.set_score(data.session, data.ids["a3"], config.pk, "5", actor=admin)
    scores.set_score(data.session, data.ids["b3"], config.pk, "1", actor=admin)
    return {"team": team, "admin": admin, "ids": data.ids}


def rows(text):
    return [json.loads(line) for line in text.splitlines()]


def test_a_teams_filter_with_a_minimum_score(team):
    every = rows(run("export_dataset", "--team", "graders", "--filter", "q=Parser"))
    assert [r["entry"] for r in every] == [team["ids"]["a3"], team["ids"]["b3"]]
    assert all(r["reconstructed"] for r in every)  # built here, not by a run
    assert every[0]["input"]["messages"][0]["role"] == "system"
    good = rows(run("export_dataset", "--team", "graders", "--min-score", "q=4"))
    assert [r["entry"] for r in good] == [team["ids"]["a3"]]
    assert rows(run("export_dataset", "--team", "graders", "--filter", "q=nothing")) == []


def test_a_queue_in_the_finetuning_format_to_a_file(team, tmp_path):
    queue = review_queues.create_queue(
        team["team"], actor=team["admin"], name="ends", filters=ListFilters(), scope="branch_ends"
    )
    target = tmp_path / "set.jsonl"
    run("export_dataset", "--queue", str(queue.pk), "--format", "finetune", "-o", str(target))
    written = rows(target.read_text())
    assert len(written) == 2 and set(written[0]) == {"messages", "tools"}
    assert written[0]["messages"][-1] == {
        "role": "assistant",
        "content": "Fixed the parser. All tests pass.",
    }


def test_bad_arguments_are_refused(team):
    for args in (
        ("--queue", "999"),
        ("--team", "nobody"),
        ("--team", "graders", "--min-score", "q=x"),
    ):
        with pytest.raises(CommandError):
            run("export_dataset", *args)
