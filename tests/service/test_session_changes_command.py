"""manage.py session_changes: what each node of a session changed, as text or JSON with
diffs."""

import io
import json

import pytest

from sessions_app.services import sessions
from tests.support.agent_runs import run_here as run

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tasks_stay_in_process", "own_snapshot_dir"),
]


@pytest.fixture
def owner(make_user):
    return make_user()


@pytest.fixture
def session(owner, workspace, redis_ready):
    return sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")


def test_the_session_changes_command(session, owner, workspace):
    from django.core.management import call_command

    (workspace / "m.txt").write_text("a\n")
    run(session, owner, "!echo b >> m.txt")
    node = session.leaf_pi_id
    run(session, owner, "!rm m.txt")
    out = io.StringIO()
    call_command("session_changes", session.pi_id, stdout=out)
    text_out = out.getvalue()
    assert f"{node}" in text_out and "modified   +1 -0" in text_out and "deleted" in text_out
    out = io.StringIO()
    call_command("session_changes", session.pi_id, "--leaf", node, "--json", "--diff", stdout=out)
    listed = json.loads(out.getvalue())
    assert [e["entry"] for e in listed] == [node]
    assert listed[0]["files"][0]["path"] == "m.txt" and "+b\n" in listed[0]["files"][0]["diff"]
