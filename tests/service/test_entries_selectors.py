"""The read layer: entry lookups, the leaf id, teams with their shares, and the panel
context builders that the session page and the panels' own endpoints share."""

import re
import uuid

import pytest
from django.db import connection
from django.http import Http404
from django.test.utils import CaptureQueriesContext

from sessions_app.models import Job, Session, SessionShare, Team
from sessions_app.selectors import entries
from sessions_app.selectors.teams import teams_with_shares
from sessions_app.services import jobs
from sessions_app.services import sessions as sessions_service
from tests.support.job_sessions import SMALL, make_session
from tests.support.tree_data import import_branched
from tests.support.web import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def branched(make_user, workspace):
    owner = make_user("reader")
    return import_branched(owner, str(workspace), session_id=str(uuid.uuid4()))


def test_entry_lookups_stay_inside_their_session(branched, make_user):
    other = sessions_service.create_session(owner=make_user("other"), cwd="/tmp")
    entry = entries.get_entry_or_404(branched, "e0000014")
    assert entry.session_id == branched.pk and entry.pi_id == "e0000014"
    with pytest.raises(Http404):
        entries.get_entry_or_404(other, "e0000014")
    assert entries.find_entry(branched, "") is None
    assert entries.find_entry(branched, "nope") is None
    light = entries.find_entry(branched, "e0000014", "pk", "pi_id")
    assert light.get_deferred_fields() >= {"line", "preview"}
    assert entries.entry_exists(branched, "e0000014")
    assert not entries.entry_exists(other, "e0000014") and not entries.entry_exists(branched, None)
    assert entries.entry_pk(branched, "e0000014") == entry.pk
    assert entries.entry_pk(other, "e0000014") is None


def test_the_leaf_id_lives_on_the_session(branched, make_user):
    assert branched.leaf_pi_id == branched.leaf.pi_id == "e0000014"
    empty = sessions_service.create_session(owner=make_user("empty"), cwd="/tmp")
    assert empty.leaf_pi_id is None


def _team_with_shares(user, name, sessions):
    team = Team.objects.create(name=name)
    team.members.add(user)
    for session in sessions:
        SessionShare.objects.create(session=session, team=team, role="viewer")


def test_teams_with_their_shares_cost_the_same_queries_for_any_number_of_teams(make_user):
    me, owner = make_user("me"), make_user("sharer")
    sessions = [
        sessions_service.create_session(owner=owner, cwd="/tmp", name=f"s{i}") for i in range(4)
    ]
    _team_with_shares(me, "alpha", sessions[:2])

    def counted():
        with CaptureQueriesContext(connection) as queries:
            rows = teams_with_shares(me)
            shown = [(r["team"].name, [str(s.session) for s in r["shares"]]) for r in rows]
            shown += [[m.get_username() for m in r["members"]] for r in rows]
            shown += [[s.session.owner.get_username() for s in r["shares"]] for r in rows]
        return shown, len(queries)

    shown_one, one = counted()
    assert shown_one[0][0] == "alpha" and sorted(shown_one[0][1]) == ["s0", "s1"]
    _team_with_shares(me, "beta", sessions[1:])
    _team_with_shares(me, "gamma", sessions)
    shown_three, three = counted()
    assert [row[0] for row in shown_three[:3]] == ["alpha", "beta", "gamma"]
    assert len(shown_three[2][1]) == 4
    assert three == one  # no query per team


def _jobs_ids(html: str) -> list[str]:
    return re.findall(r'data-job-id="([^"]+)"', html)


@pytest.mark.django_db(transaction=True)
def test_the_page_and_the_jobs_endpoint_draw_the_same_list(make_user, settings):
    settings.PIWEB_JOBS_QUEUE = "q-read-layer-tests-unconsumed"
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    job = jobs.request_compaction(session, actor=owner)
    client = client_for(owner)
    page = client.get(f"/s/{session.pi_id}/").content.decode()
    panel = client.get(f"/s/{session.pi_id}/jobs/").content.decode()
    assert _jobs_ids(page) == _jobs_ids(panel) == [str(job.pk)]
    # The chat panel's transcript comes from one builder too.
    transcript = client.get(f"/s/{session.pi_id}/chat/transcript/").content.decode()
    shown = re.findall(r'data-entry-id="([^"]+)"', transcript)
    assert shown and re.findall(r'data-entry-id="([^"]+)"', page) == shown


@pytest.mark.django_db(transaction=True)
def test_drawing_the_session_page_writes_nothing(make_user, settings):
    """Template tags only format: a GET of the page (every panel) sends no INSERT,
    UPDATE or DELETE, even with a job whose worker stopped heartbeating."""
    from datetime import timedelta

    from django.utils import timezone

    settings.PIWEB_JOBS_QUEUE = "q-read-layer-tests-unconsumed"
    owner = make_user()
    session = make_session(owner, turns=3, compaction=SMALL)
    job = jobs.request_compaction(session, actor=owner)
    old = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS + 1)
    Job.objects.filter(pk=job.pk).update(status="running", attempts=1, heartbeat_at=old)
    client = client_for(owner)
    client.get("/")  # (the login's own session writes happen before we count)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(f"/s/{session.pi_id}/").status_code == 200
    writes = [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert writes == []
    assert Job.objects.get(pk=job.pk).status == "running"
    assert Session.objects.get(pk=session.pk).leaf_pi_id == session.leaf_pi_id
