"""selectors/datasets.py: a row's input equals the request the fake provider captured
(system prompt, messages and tools), for answers of runs made here; answers with no
record are rebuilt and marked; the fine-tuning rows match OpenAI's published format."""

import json
from pathlib import Path

import jsonschema
import pytest

from sessions_app.models import AnswerInput, Entry, SessionShare, Team, TeamMembership
from sessions_app.selectors import datasets
from sessions_app.selectors.sessions import ListFilters
from sessions_app.services import review_queues, scores
from tests.support.agent_runs import new_session, run_here
from tests.support.openai_finetune import CHAT_FINETUNE_LINE
from tests.support.scripted_llm import text, tool_call

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tasks_stay_in_process"),
]


@pytest.fixture
def scored(make_user, workspace, redis_ready, llm):
    owner, admin = make_user(), make_user()
    session = new_session(owner, workspace)
    (Path(session.cwd) / "notes.txt").write_text("zebra\n")
    llm.push(tool_call("read", {"path": "notes.txt"}), text("It says zebra."))
    run_here(session, owner, "What is in notes.txt?")
    llm.push(text("Still zebra."))
    run_here(session, owner, "And now?")
    team = Team.objects.create(name="graders")
    TeamMembership.objects.create(team=team, user=admin, role="admin")
    SessionShare.objects.create(session=session, team=team, role="viewer")
    config = scores.create_config(
        team, actor=admin, name="quality", kind="number", min_value=1, max_value=5
    )
    answers = list(Entry.objects.filter(session=session, role="assistant").order_by("seq"))
    for value, answer in zip(("2", "4", "5"), answers, strict=True):
        scores.set_score(session, answer.pi_id, config.pk, value, actor=admin)
    return {"session": session, "team": team, "admin": admin, "answers": answers, "llm": llm}


def test_each_rows_input_is_the_request_the_provider_received(scored):
    answers = datasets.filter_answers(scored["admin"], scored["team"], ListFilters())
    rows = list(datasets.dataset_rows(answers, scored["team"].pk))
    requests = scored["llm"].requests
    assert len(rows) == len(requests) == 3
    for row, request in zip(rows, requests, strict=True):
        assert row["input"]["messages"] == request["messages"]
        assert row["input"]["tools"] == request["tools"]
        assert row["reconstructed"] is False
        assert row["session"] == scored["session"].pi_id
    assert rows[0]["answer"]["tool_calls"][0]["function"]["name"] == "read"
    assert rows[1]["answer"]["content"] == "It says zebra."
    assert [r["scores"][0]["value"] for r in rows] == [2.0, 4.0, 5.0]


def test_rows_without_a_record_are_rebuilt_and_marked(scored):
    AnswerInput.objects.all().delete()
    answers = datasets.filter_answers(scored["admin"], scored["team"], ListFilters())
    rows = list(datasets.dataset_rows(answers, scored["team"].pk))
    assert all(r["reconstructed"] for r in rows)
    # the session did not change since: the rebuilt input is still the one sent
    assert [r["input"]["messages"] for r in rows] == [q["messages"] for q in scored["llm"].requests]


def test_min_score_and_queue_sources(scored):
    team, admin = scored["team"], scored["admin"]
    answers = datasets.filter_answers(admin, team, ListFilters())
    kept = list(datasets.dataset_rows(answers, team.pk, {"quality": 4}))
    assert [r["entry"] for r in kept] == [a.pi_id for a in scored["answers"][1:]]
    queue = review_queues.create_queue(team, actor=admin, name="q", filters=ListFilters())
    from_queue = list(datasets.dataset_rows(datasets.queue_answers(queue), team.pk))
    assert [r["entry"] for r in from_queue] == [scored["session"].leaf_pi_id]


def test_finetune_rows_match_openais_published_format(scored):
    answers = datasets.filter_answers(scored["admin"], scored["team"], ListFilters())
    lines = list(
        datasets.dataset_lines(datasets.dataset_rows(answers, scored["team"].pk), "finetune")
    )
    assert len(lines) == 3
    for line in lines:
        row = json.loads(line)
        jsonschema.validate(row, CHAT_FINETUNE_LINE)
        assert row["messages"][-1]["role"] == "assistant"
    broken = {"messages": [{"role": "robot", "content": "x"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, CHAT_FINETUNE_LINE)
