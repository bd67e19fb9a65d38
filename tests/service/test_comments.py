"""Comments: threaded, authored, resolvable, counted per node — and never in the context."""

import pytest

from sessions_app.models import Comment, SessionShare, Team, TeamMembership
from sessions_app.services import comments
from sessions_app.services.comments import CommentError, CommentRightsError
from tests.support.branchy_session import build_branchy_session

pytestmark = pytest.mark.django_db


@pytest.mark.embedded
def test_bad_comment_input(make_user):
    owner = make_user()
    data = build_branchy_session(owner)
    with pytest.raises(CommentError, match="empty"):
        comments.add_comment(data.session, data.ids["u1"], owner, "   ")
    with pytest.raises(CommentError, match="No entry"):
        comments.add_comment(data.session, "nope", owner, "hi")
    with pytest.raises(CommentError, match="limited"):
        comments.add_comment(data.session, data.ids["u1"], owner, "x" * 10_001)
    other = build_branchy_session(owner)
    foreign = comments.add_comment(other.session, other.ids["u1"], owner, "elsewhere")
    with pytest.raises(CommentError):
        comments.add_comment(data.session, data.ids["u1"], owner, "hi", reply_to=foreign.pk)
    with pytest.raises(CommentError):
        comments.set_resolved(data.session, foreign.pk, owner)
    assert Comment.objects.filter(session=data.session).count() == 0


def test_comment_views_escape_and_review_list_deep_links(client, make_user):
    owner = make_user("owner")
    data = build_branchy_session(owner)
    client.force_login(owner)
    base = f"/s/{data.session.pi_id}/review/comments/"
    response = client.post(
        base + "add/",
        {"entry": data.ids["q2"], "body": "<img src=x onerror=alert(1)>"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;" in body and "<img src=x" not in body
    assert client.post(base + "add/", {"entry": data.ids["q2"], "body": ""}).status_code == 400
    assert client.post(base + "add/", {"entry": "zzz", "body": "x"}).status_code == 404
    listing = client.get(f"/s/{data.session.pi_id}/review/").content.decode()
    assert f"/s/{data.session.pi_id}/?leaf={data.ids['q2']}&amp;target={data.ids['q2']}" in listing
    comment = Comment.objects.get()
    resolved = client.post(f"{base}{comment.pk}/resolve/", HTTP_HX_REQUEST="true")
    assert resolved.status_code == 200 and "Reopen" in resolved.content.decode()
    assert "No open comments" in client.get(f"/s/{data.session.pi_id}/review/").content.decode()
    counts = client.get(f"/s/{data.session.pi_id}/review/counts.json").json()
    assert counts == {"open": {}}


# A thread is resolved or reopened by whoever started it, an editor or the owner; a viewer
# cannot close someone else's thread, but can reply to it.
@pytest.fixture
def data(make_user):
    return build_branchy_session(make_user("owner"))


@pytest.fixture
def team(data, make_user):
    viewer, editor = make_user("viewer"), make_user("editor")
    for role, user in (("viewer", viewer), ("editor", editor)):
        group = Team.objects.create(name=f"{role}s")
        TeamMembership.objects.create(team=group, user=user)
        SessionShare.objects.create(session=data.session, team=group, role=role)
    return viewer, editor


def test_viewer_resolves_only_their_own_threads(client, data, team):
    viewer, editor = team
    owner, sid = data.session.owner, data.session.pi_id
    owners = comments.add_comment(data.session, data.ids["a3"], owner, "Owner's question")
    mine = comments.add_comment(data.session, data.ids["a3"], viewer, "Viewer's note")

    with pytest.raises(CommentRightsError):
        comments.set_resolved(data.session, owners.pk, viewer)
    client.force_login(viewer)
    refused = client.post(f"/s/{sid}/review/comments/{owners.pk}/resolve/", HTTP_HX_REQUEST="true")
    assert refused.status_code == 403
    owners.refresh_from_db()
    assert not owners.resolved
    # the panel offers Resolve only where it is allowed; replying stays open to everyone
    panel = client.get(f"/s/{sid}/review/comments/", {"entry": data.ids["a3"]}).content.decode()
    assert panel.count("rv-resolve") == 1 and f"comments/{mine.pk}/resolve/" in panel
    assert panel.count("rv-reply-form") == 2
    listing = client.get(f"/s/{sid}/review/").content.decode()
    assert f"comments/{mine.pk}/resolve/" in listing
    assert f"comments/{owners.pk}/resolve/" not in listing

    ok = client.post(f"/s/{sid}/review/comments/{mine.pk}/resolve/", HTTP_HX_REQUEST="true")
    assert ok.status_code == 200
    reopen = client.post(f"/s/{sid}/review/comments/{mine.pk}/reopen/", HTTP_HX_REQUEST="true")
    assert reopen.status_code == 200

    # editors and the owner resolve anyone's thread
    client.force_login(editor)
    assert (
        client.post(f"/s/{sid}/review/comments/{mine.pk}/resolve/", HTTP_HX_REQUEST="true")
    ).status_code == 200
    comments.set_resolved(data.session, owners.pk, owner)
    assert Comment.objects.get(pk=owners.pk).resolved
    with pytest.raises(CommentRightsError):
        comments.set_resolved(data.session, owners.pk, viewer, resolved=False)
