"""The search view (sessions_app/views/search.py): signed-in people only, hits as deep
links, a bad filter a 400. What a search finds, and in which sessions, is tested in
test_search_selectors.py."""

import pytest

from tests.support.access import Call, each, login_redirects
from tests.support.branchy_session import build_branchy_session

pytestmark = [pytest.mark.django_db]

ANY_USER = [Call("search", per_session=False)]


def test_it_requires_login(shared):
    assert login_redirects(ANY_USER, shared.session) == each(ANY_USER, "/login/")


def test_search_page_view(client, make_user):
    owner, member = make_user("owner"), make_user("member")
    data = build_branchy_session(owner)
    client.force_login(owner)
    response = client.get("/search/", {"q": "zebrafish"})
    assert response.status_code == 200
    body = response.content.decode()
    link = f'href="/s/{data.session.pi_id}/?leaf={data.ids["q2"]}&amp;target={data.ids["q2"]}"'
    # The hit is titled by the session's name, not its id.
    assert f'<a class="rv-hit" {link}>Parser fix</a>' in body
    client.force_login(member)
    body = client.get("/search/", {"q": "zebrafish"}).content.decode()
    assert data.session.pi_id not in body and "No matches" in body
    assert client.get("/search/", {"q": "x", "from": "nope"}).status_code == 400
