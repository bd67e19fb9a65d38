"""The alternatives page (views/alternatives.py): start variants from a node, see them
side by side, stop all, keep one (jobs stay queued here: no worker)."""

import pytest
from django.urls import reverse

from sessions_app.models import Entry, Job
from sessions_app.services import sessions
from tests.support.agent_runs import run_here

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


def test_start_compare_stop_all_and_keep(session, owner, client_for, workspace):
    run_here(session, owner, "!printf 'x\\n' > a.txt")
    node = session.leaf_pi_id
    c = client_for(owner)
    page_url = reverse("sessions_app:alternatives", args=[session.pi_id])
    page = c.get(page_url, {"at": node}).content.decode()
    assert "No variants tried at this node yet." in page and 'name="message_4"' in page
    pane = c.get(reverse("sessions_app:session_detail", args=[session.pi_id]), {"target": node})
    assert f"/alternatives/?at={node}" in pane.content.decode()  # "Try alternatives…"

    start = reverse("sessions_app:alternatives_start", args=[session.pi_id])
    refused = c.post(start, {"at": node}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 400 and b"at least one variant" in refused.content
    assert 'name="tools_1"' in page and "read-only" in page  # the tool set of each variant
    bad = c.post(
        start, {"at": node, "message_1": "a", "tools_1": "read,nope"}, HTTP_HX_REQUEST="true"
    )
    assert bad.status_code == 400 and b"Unknown tool set" in bad.content
    data = {"at": node, "message_1": "plan A", "message_3": "plan <b>C</b>", "thinking_3": "high"}
    data |= {"check": "true", "tools_1": "read-only", "tools_3": "read,bash"}
    response = c.post(start, data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response.headers["HX-Redirect"].endswith(f"?at={node}")
    jobs = list(Job.objects.filter(session=session, params__check="true").order_by("created_at"))
    assert len(jobs) == 2
    tools = [j.params["alternative"]["tools"] for j in jobs]
    assert tools == [["read", "grep", "find", "ls"], ["read", "bash"]]
    page = c.get(page_url, {"at": node}).content.decode()
    assert page.count('class="alt-column"') == 2 and "Stop all" in page
    assert "plan &lt;b&gt;C&lt;/b&gt;" in page  # each variant's message, escaped
    assert "thinking high" in page and "<b>C</b>" not in page
    tools_cells = page.split('class="alt-tools differs">')[1:]  # the tool sets differ: marked
    assert len(tools_cells) == 2 and "<code>grep</code>" in tools_cells[0]
    assert "<code>bash</code>" in tools_cells[1] and "<code>grep</code>" not in tools_cells[1]

    stop = reverse("sessions_app:alternatives_stop", args=[session.pi_id])
    assert b"Stopping 2" in c.post(stop, {"at": node}, HTTP_HX_REQUEST="true").content
    assert {j.status for j in Job.objects.filter(pk__in=[j.pk for j in jobs])} == {"cancelled"}
    columns = c.get(
        reverse("sessions_app:alternatives_columns", args=[session.pi_id]), {"at": node}
    ).content.decode()
    assert "Stop all" not in columns and columns.count("Keep this one") == 2
    assert columns.count("stopped, no check") == 2  # a stopped variant gets no check

    keep = reverse("sessions_app:alternatives_keep", args=[session.pi_id])
    kept = c.post(keep, {"at": node, "run": str(jobs[1].pk)}, HTTP_HX_REQUEST="true")
    assert kept.status_code == 200 and "HX-Redirect" in kept.headers
    session.refresh_from_db()
    tip = Entry.objects.get(session=session, pk=session.leaf_id)
    assert tip.label == "kept" and tip.payload["message"]["role"] == "user"
    assert "plan" in str(tip.payload) and "C" in str(tip.payload)


def test_an_archived_variant_folds_away_in_the_comparison(session, owner, client_for):
    from sessions_app.services import alternatives, navigation

    run_here(session, owner, "!true")
    node = session.leaf_pi_id
    started = alternatives.start(
        session, owner, node, [alternatives.Variant("one"), alternatives.Variant("two")]
    )
    alternatives.stop_all(session, owner, [s.job for s in started])
    c = client_for(owner)
    url = reverse("sessions_app:alternatives_columns", args=[session.pi_id])
    assert c.get(url, {"at": node}).content.decode().count('class="alt-column"') == 2
    navigation.set_archived(session, started[0].head_pi_id, True, actor=owner)
    html = c.get(url, {"at": node}).content.decode()
    assert html.count('class="alt-column"') == 1 and "1 archived variant(s) folded away" in html
    assert str(started[1].job.pk) in html and str(started[0].job.pk) not in html
    navigation.set_archived(session, started[0].head_pi_id, False, actor=owner)
    assert c.get(url, {"at": node}).content.decode().count('class="alt-column"') == 2
