"""selectors/runs.py: which active run is on a leaf's branch (runs are per branch)."""

import pytest

from sessions_app.models import Job
from sessions_app.selectors import runs
from sessions_app.services import sessions

pytestmark = pytest.mark.django_db


def _msg(text_):
    return {"type": "message", "message": {"role": "user", "content": text_, "timestamp": 1}}


def test_a_run_covers_the_branch_below_where_it_started(make_user, workspace):
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    node = sessions.append_entry(session, _msg("node"))
    a1 = sessions.append_entry(session, _msg("a1"), parent_pi_id=node.pi_id)
    a2 = sessions.append_entry(session, _msg("a2"), parent_pi_id=a1.pi_id)
    b1 = sessions.append_entry(session, _msg("b1"), parent_pi_id=node.pi_id)
    run_a = Job.objects.create(
        session=session, kind="agent_run", status="running", prepared_leaf_pi_id=a1.pi_id
    )
    run_b = Job.objects.create(
        session=session, kind="agent_run", status="queued", prepared_leaf_pi_id=b1.pi_id
    )
    Job.objects.create(
        session=session, kind="agent_run", status="done", prepared_leaf_pi_id=node.pi_id
    )
    assert runs.active_runs(session) == [run_a, run_b]
    assert runs.active_run(session, a2.pi_id) == run_a
    assert runs.active_run(session, a1.pi_id) == run_a
    assert runs.active_run(session, b1.pi_id) == run_b
    assert runs.active_run(session, node.pi_id) is None  # above both: a new branch may run
    assert runs.active_run(session, None) is None
    sessions.set_leaf(session, b1.pi_id)
    assert runs.active_run(session) == run_b  # the stored leaf, even from a stale object
    assert runs.run_of(session, str(run_a.pk)) == run_a
    assert runs.run_of(session, "not-a-uuid") is None and runs.run_of(session, "") is None
    # A run recorded without a starting entry covers every branch (as all runs once did).
    legacy = Job.objects.create(session=session, kind="agent_run", status="running")
    assert runs.active_run(session, node.pi_id) == legacy
    assert runs.state_key(session.pk, run_a.pk) != runs.state_key(session.pk, run_b.pk)
