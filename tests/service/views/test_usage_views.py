"""The usage views (sessions_app/views/usage.py): the dashboard, its CSV export and a
session's context chart."""

import pytest

from sessions_app.models import Team, TeamMembership
from tests.support.access import Call, each, login_redirects, statuses
from tests.support.usage_data import import_costly
from tests.support.web import client_for

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]

ANY_USER = [Call("usage_dashboard", per_session=False), Call("usage_csv", per_session=False)]
CHART = [Call("usage_context_chart")]


def test_it_requires_login(shared):
    calls = ANY_USER + CHART
    assert login_redirects(calls, shared.session) == each(calls, "/login/")


def test_it_requires_a_share_of_the_session(shared):
    assert statuses(client_for(shared.stranger), CHART, shared.session) == each(CHART, 404)
    assert statuses(client_for(shared.viewer), CHART, shared.session) == each(CHART, 200)


def test_dashboard_and_csv_show_only_what_the_user_can_see(make_user, client):
    owner, stranger = make_user("owner3"), make_user("stranger3")
    import_costly(owner, cwd="/work/secret-project")
    team = Team.objects.create(name="owners-only")
    TeamMembership.objects.create(team=team, user=owner)
    client.force_login(stranger)
    for url in ("/usage/", "/usage/export.csv"):
        body = client.get(url).content.decode()
        assert "secret-project" not in body and "claude" not in body
    assert client.get(f"/usage/?team={team.pk}").status_code == 404  # not a member
    assert client.get("/usage/?team=abc").status_code == 404
    response = client.get("/usage/?from=yesterday")
    assert response.status_code == 200 and "is not a date" in response.content.decode()
    client.force_login(owner)
    rows = client.get("/usage/export.csv").content.decode().splitlines()
    assert (
        rows[0]
        == "table,day,model,session,project,person,input,output,cache_read,cache_write,tokens,cost"
    )
    (total,) = [r.split(",") for r in rows if r.startswith("total,")]
    assert total[-2] == "12145" and float(total[-1]) == pytest.approx(1.96)
    assert sum(1 for r in rows if r.startswith("day,")) == 6  # 3 buckets a day


def test_context_chart_endpoint(make_user, client):
    owner = make_user("owner4")
    session = import_costly(owner)
    client.force_login(owner)
    body = client.get(f"/s/{session.pi_id}/usage/chart/").content.decode()
    assert 'id="context-chart-data"' in body and "e0000007" in body
    assert client.get(f"/s/{session.pi_id}/usage/chart/?leaf=nope").status_code == 404
    early = client.get(f"/s/{session.pi_id}/usage/chart/?leaf=e0000003").content.decode()
    assert "e0000007" not in early and 'class="turn"' in early


def test_csv_cells_from_imported_files_never_start_a_formula(make_user, client):
    owner = make_user("owner8")
    import_costly(owner, cwd="=HYPERLINK(1)")
    client.force_login(owner)
    body = client.get("/usage/export.csv").content.decode()
    assert ",'=HYPERLINK(1)," in body and ",=HYPERLINK" not in body


def test_the_dashboard_counts_answers_scored_below_a_mark_by_model(make_user):
    from sessions_app.services import scores
    from tests.support.branchy_session import build_branchy_session

    owner = make_user()
    team = Team.objects.create(name="graders")
    TeamMembership.objects.create(team=team, user=owner, role="admin")
    data = build_branchy_session(owner)
    config = scores.create_config(
        team, actor=owner, name="q", kind="number", min_value=1, max_value=5
    )
    scores.set_score(data.session, data.ids["a3"], config.pk, "2", actor=owner)
    scores.set_score(data.session, data.ids["b3"], config.pk, "4", actor=owner)
    client = client_for(owner)
    page = client.get("/usage/", {"score": "q<3"}).content.decode()
    row = page[page.index('data-score-row="q"') :].split("</tr>")[0]
    assert "scripted-model" in row and "<td>2</td><td>3.0</td><td>1</td>" in row
    assert 'data-usage-chart="scores"' in page and 'id="usage-scores-data"' in page
    assert client.get("/usage/", {"score": "q<<3"}).status_code == 400
