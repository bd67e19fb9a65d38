"""The review views (sessions_app/views/review.py): who may read the review panels, export
and compare, who may start a compare summary, and who may manage sharing. Each review
feature's own pages are also tested with it (test_review_comments.py, test_review_compare.py,
test_review_exports.py, test_review_search.py, test_review_sharing.py, test_share_scope.py)."""

import pytest
from django.urls import reverse

from sessions_app.models import Job
from tests.support.access import Call, each, login_redirects, post, statuses
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db]

READS = [
    Call("review_list"),
    Call("review_comment_counts"),
    Call("export", args=("md",)),
    Call("compare", data={"a": "e0000014", "b": "e0000016"}),
]
OWNER_ONLY = [
    Call("sharing"),
    post("sharing_link", {"scope": "path"}),
]
ANY_USER = [Call("search", per_session=False), Call("teams", per_session=False)]


def test_it_requires_login(shared):
    calls = READS + OWNER_ONLY + ANY_USER
    assert login_redirects(calls, shared.session) == each(calls, "/login/")


def test_it_requires_a_share_of_the_session(shared):
    strangers = statuses(client_for(shared.stranger), READS + OWNER_ONLY, shared.session)
    assert strangers == each(READS + OWNER_ONLY, 404)
    assert statuses(client_for(shared.viewer), READS, shared.session) == each(READS, 200)


def test_it_requires_ownership_to_manage_sharing(shared):
    editors = statuses(client_for(shared.editor), OWNER_ONLY, shared.session)
    assert editors == each(OWNER_ONLY, 403)
    assert not shared.session.share_links.exists()


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
