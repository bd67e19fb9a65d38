"""The compare views (sessions_app/views/compare.py): who may compare two branches and who
may start a compare summary. The comparison itself is tested in test_compare.py and test_job_compare_summary.py."""

import pytest
from django.urls import reverse

from sessions_app.models import Job
from tests.support.access import Call, each, login_redirects, statuses
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db]

READS = [Call("compare", data={"a": "e0000014", "b": "e0000016"})]


def test_it_requires_login(shared):
    assert login_redirects(READS, shared.session) == each(READS, "/login/")


def test_it_requires_a_share_of_the_session(shared):
    strangers = statuses(client_for(shared.stranger), READS, shared.session)
    assert strangers == each(READS, 404)
    assert statuses(client_for(shared.viewer), READS, shared.session) == each(READS, 200)


def test_it_requires_editor_rights_to_start_a_compare_summary(shared):
    s = shared.session
    url = reverse("sessions_app:compare_summary", args=[s.pi_id])
    response = client_for(shared.viewer).post(url, {"a": "e0000014", "b": "e0000016"})
    assert response.status_code == 403
    assert not Job.objects.filter(session=s, kind=Job.Kind.COMPARE_SUMMARY).exists()


def test_the_compare_summary_redirect_encodes_its_query(shared):
    from urllib.parse import parse_qs, urlsplit

    url = reverse("sessions_app:compare_summary", args=[shared.session.pi_id])
    response = client_for(shared.editor).post(url, {"a": "e0000014", "b": "e0000016"})
    assert response.status_code == 302, response.content
    query = parse_qs(urlsplit(response["Location"]).query)
    assert query == {"a": ["e0000014"], "b": ["e0000016"]}
