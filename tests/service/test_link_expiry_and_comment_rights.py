"""Two promises of the review area.

- A share link's expiry is a whole number of days from 1 to 365, or empty (no expiry):
  `0`, `abc`, `1.5`… are refused with a clear message, never turned into a link that
  never expires.
- A comment thread is resolved (or reopened) by the person who started it, an editor or
  the owner; a viewer cannot close someone else's thread, but can reply to it.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import Comment, SessionShare, ShareLink, Team, TeamMembership
from sessions_app.services import comments, sharing
from sessions_app.services.comments import CommentRightsError
from sessions_app.services.sharing import SharingError
from tests.support.branchy_session import build_branchy_session

pytestmark = pytest.mark.django_db

BAD_EXPIRIES = ("0", "abc", "1.5", "-3", "366", "1e3", "٣", " 2 days", "0x10")


@pytest.fixture
def data(make_user):
    return build_branchy_session(make_user("owner"))


@pytest.mark.parametrize("raw", BAD_EXPIRIES)
def test_bad_link_expiry_is_refused_not_made_permanent(client, data, raw):
    owner = data.session.owner
    with pytest.raises(SharingError, match="whole number of days"):
        sharing.create_link(data.session, actor=owner, leaf_pi_id=None, expires_in_days=raw)
    client.force_login(owner)
    response = client.post(
        f"/s/{data.session.pi_id}/sharing/link/", {"leaf": data.ids["a3"], "expires_in_days": raw}
    )
    assert response.status_code == 400
    assert "whole number of days from 1 to 365" in response.content.decode()
    assert not ShareLink.objects.exists()  # nothing was created, least of all a forever link


def test_good_link_expiry_and_empty_means_no_expiry(client, data):
    owner = data.session.owner
    week = sharing.create_link(data.session, actor=owner, leaf_pi_id=None, expires_in_days="7")
    assert timedelta(days=6, hours=23) < week.expires_at - timezone.now() <= timedelta(days=7)
    for empty in (None, "", "  "):
        link = sharing.create_link(
            data.session, actor=owner, leaf_pi_id=None, expires_in_days=empty
        )
        assert link.expires_at is None
    year = sharing.create_link(data.session, actor=owner, leaf_pi_id=None, expires_in_days=365)
    assert year.expires_at is not None


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
