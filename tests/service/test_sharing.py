"""Sharing with teams and read-only links: rights, revocation, expiry, the live page."""

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.core.errors import NotFound
from sessions_app.models import Activity, SessionShare, ShareLink, Team, TeamMembership
from sessions_app.selectors.access import EDITOR, REVIEWER, check_access
from sessions_app.services import sessions, sharing
from sessions_app.services.sharing import SharingError
from tests.support.branchy_session import assistant, build_branchy_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(make_user):
    owner, member = make_user("owner"), make_user("member")
    team = Team.objects.create(name="core")
    TeamMembership.objects.create(team=team, user=owner)
    TeamMembership.objects.create(team=team, user=member)
    data = build_branchy_session(owner)
    return owner, member, team, data


@pytest.mark.embedded
def test_share_with_team_change_role_and_revoke(setup):
    owner, member, team, data = setup
    session = data.session
    with pytest.raises(NotFound):
        check_access(member, session.pi_id)
    share = sharing.share_with_team(session, team.pk, "viewer", actor=owner)
    # a team editor on a viewer share reads and scores, but does not edit
    assert check_access(member, session.pi_id).role == REVIEWER
    sharing.share_with_team(session, team.pk, "editor", actor=owner)
    assert check_access(member, session.pi_id, EDITOR).role == EDITOR
    assert SessionShare.objects.filter(session=session).count() == 1
    sharing.unshare_team(session, share.pk, actor=owner)
    with pytest.raises(NotFound):
        check_access(member, session.pi_id)
    verbs = list(Activity.objects.filter(session=session).values_list("verb", flat=True))
    assert verbs.count("shared") == 2 and "unshared" in verbs
    with pytest.raises(SharingError):
        sharing.share_with_team(session, team.pk, "admin", actor=owner)
    outsider_team = Team.objects.create(name="not mine")
    with pytest.raises(SharingError):
        sharing.share_with_team(session, outsider_team.pk, "viewer", actor=owner)


@pytest.mark.embedded
def test_link_page_shows_live_branch_and_dies_when_revoked_or_expired(client, setup):
    owner, _, _, data = setup
    session, ids = data.session, data.ids
    link = sharing.create_link(
        session, actor=owner, leaf_pi_id=ids["a3"], target_pi_id=ids["a2"], scope="subtree"
    )
    url = f"/l/{link.token}/"
    response = client.get(url)  # logged out
    assert response.status_code == 200
    body = response.content.decode()
    assert "as they are <em>now</em>" in body
    assert "Fixed the parser. All tests pass." in body  # branch A is shown
    assert f'id="e-{ids["b3"]}"' not in body  # branch B is not shown at all (not in the tree)
    assert f'data-entry-id="{ids["b3"]}"' not in body
    assert (
        f'id="e-{ids["a2"]}"' in body
        and "rv-entry rv-type-message rv-role-assistant rv-target" in body
    )
    assert f'data-piweb-share="{link.token}"' in body
    assert "rv-comment-form" not in body and "Share…" not in body
    # live, not a copy: an entry appended after the link was made shows up
    sessions.append_entry(session, assistant("A later follow-up note."), parent_pi_id=ids["a3"])
    later = client.get(url).content.decode()
    tree_entry = session.entries.order_by("-seq").first()
    assert f'id="e-{tree_entry.pi_id}"' not in later  # the link's leaf is a3 …
    # … but the tree shows the new node, and the branch through it can be opened
    assert f'data-entry-id="{tree_entry.pi_id}"' in later
    opened = client.get(url, {"leaf": tree_entry.pi_id}).content.decode()
    assert f'id="e-{tree_entry.pi_id}"' in opened and "A later follow-up note." in opened
    # exports through the link
    md = client.get(f"/l/{link.token}/export/md/")
    assert md.status_code == 200 and "Fixed the parser" in md.content.decode()

    sharing.revoke_link(session, link.pk, actor=owner)
    assert client.get(url).status_code == 404
    assert client.get(f"/l/{link.token}/export/md/").status_code == 404
    client.force_login(owner)  # even the owner: a revoked link is gone
    assert client.get(url).status_code == 404
    client.logout()

    expired = sharing.create_link(session, actor=owner, leaf_pi_id=ids["b3"], expires_in_days=1)
    assert client.get(f"/l/{expired.token}/").status_code == 200
    ShareLink.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get(f"/l/{expired.token}/").status_code == 404
    assert client.get("/l/not-a-token/").status_code == 404


def test_link_validation_and_owner_only_management(client, setup):
    owner, member, team, data = setup
    with pytest.raises(SharingError):
        sharing.create_link(data.session, actor=owner, leaf_pi_id="nope")
    with pytest.raises(SharingError):
        sharing.create_link(data.session, actor=owner, leaf_pi_id=None, expires_in_days=999)
    default = sharing.create_link(data.session, actor=owner, leaf_pi_id=None)
    assert default.leaf_pi_id == data.ids["b3"] == default.target_pi_id
    SessionShare.objects.create(session=data.session, team=team, role="editor")
    client.force_login(member)
    assert client.get(f"/s/{data.session.pi_id}/sharing/").status_code == 403
    assert client.post(f"/s/{data.session.pi_id}/sharing/link/", {}).status_code == 403
    client.force_login(owner)
    page = client.get(f"/s/{data.session.pi_id}/sharing/")
    assert page.status_code == 200 and default.token in page.content.decode()
    created = client.post(
        f"/s/{data.session.pi_id}/sharing/link/", {"leaf": data.ids["a3"], "expires_in_days": "7"}
    )
    assert created.status_code == 200
    link = ShareLink.objects.latest("created_at")
    assert link.leaf_pi_id == data.ids["a3"] and link.expires_at
    assert f"/l/{link.token}/" in created.content.decode()
    assert client.post(f"/s/{data.session.pi_id}/sharing/link/{link.pk}/revoke/").status_code == 302
    link.refresh_from_db()
    assert link.revoked_at is not None
    bad = client.post(f"/s/{data.session.pi_id}/sharing/team/", {"team": team.pk, "role": "god"})
    assert bad.status_code == 400


def test_teams_page_lists_members_and_shared_sessions(client, setup, make_user):
    owner, member, team, data = setup
    sharing.share_with_team(data.session, team.pk, "editor", actor=owner)
    client.force_login(member)
    body = client.get("/teams/").content.decode()
    assert "core" in body and "owner" in body and data.session.pi_id in body and "Editor" in body
    client.force_login(make_user("loner"))
    body = client.get("/teams/").content.decode()
    assert "You are not in any team" in body and data.session.pi_id not in body


# A link's expiry is a whole number of days from 1 to 365, or empty (no expiry): anything
# else is refused with a clear message, never turned into a link that never expires.
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
