"""selectors/alternatives.py: a variant's column from its branch and run job, and the
comparison's marks of what differs."""

import pytest

from sessions_app.models import Job
from sessions_app.selectors import alternatives as selectors
from sessions_app.services import sessions

pytestmark = pytest.mark.django_db


def _assistant(text_, tokens, cost):
    usage = {"totalTokens": tokens, "cost": {"total": cost}}
    message = {"role": "assistant", "content": [{"type": "text", "text": text_}], "usage": usage}
    return {"type": "message", "message": {**message, "stopReason": "stop", "timestamp": 1}}


def _variant(session, node, index, answer, exit_code):
    data = {"cwd": "/x", "kind": "alternative", "by": 1, "source": "snapshot"}
    head = sessions.append_entry(
        session, {"type": "custom", "customType": "piweb.workspace", "data": data},
        parent_pi_id=node,
    )  # fmt: skip
    level = sessions.append_entry(
        session, {"type": "thinking_level_change", "thinkingLevel": "high"}, parent_pi_id=head.pi_id
    )
    first = sessions.append_entry(
        session, _assistant("thinking…", 10, 0.5), parent_pi_id=level.pi_id
    )
    last = sessions.append_entry(session, _assistant(answer, 5, 0.25), parent_pi_id=first.pi_id)
    check = {"command": "true", "exitCode": exit_code, "seconds": 0.1, "output": ""}
    sessions.append_entry(
        session, {"type": "custom", "customType": "piweb.check", "data": check},
        parent_pi_id=last.pi_id,
    )  # fmt: skip
    params = {"alternative": {"at": node, "index": index, "head": head.pi_id, "source": "snapshot"}}
    return Job.objects.create(session=session, kind="agent_run", status="done", params=params)


def test_columns_count_each_branch_alone_and_mark_what_differs(make_user, workspace):
    session = sessions.create_session(owner=make_user(), cwd=str(workspace))
    node = sessions.append_entry(session, {"type": "session_info", "name": "node"}).pi_id
    one = _variant(session, node, 1, "Same answer.", 0)
    two = _variant(session, node, 2, "Same answer.", 1)
    Job.objects.create(session=session, kind="agent_run", status="done")  # not a variant
    assert selectors.jobs_at(session, node) == [one, two]
    col = selectors.column(session, one)
    assert (col["turns"], col["tokens"], col["cost"]) == (2, 15, 0.75)
    assert col["answer"] == "Same answer." and col["thinking"] == "high"
    assert col["check_exit"] == 0 and col["files_changed"] == []
    page = selectors.page_columns(session, node, set())
    assert [c["check_exit"] for c in page["columns"]] == [0, 1]
    assert page["differs"]["check_exit"] and not page["differs"]["answer"]
    assert not page["running"] and not page["copied"]
    folded = selectors.page_columns(session, node, {page["columns"][0]["head"]})
    assert len(folded["columns"]) == 1 and len(folded["archived_columns"]) == 1
    assert not folded["differs"]["check_exit"]  # only the shown columns are compared
