"""services/users.py: admins create users, deactivate and reactivate them and make
invitation links (single use, expiring, stored as a hash); a user changes their password
through Django's validators."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from sessions_app.core.errors import Forbidden
from sessions_app.models import Invitation
from sessions_app.selectors.users import open_invitation
from sessions_app.services import users

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]  # also on SQLite

GOOD = "a long fresh passphrase 7"


@pytest.fixture
def admin(make_user):
    return make_user("users-admin", is_staff=True)


def test_a_new_user_has_no_password_until_their_link_sets_one(admin):
    user = users.create_user(admin, " newcomer ", email="n@example.org")
    assert (user.username, user.email, user.is_staff) == ("newcomer", "n@example.org", False)
    assert not user.has_usable_password()
    token, invitation = users.invite(admin, user)
    assert token not in invitation.token_hash and len(invitation.token_hash) == 64
    assert invitation.expires_at - timezone.now() > timedelta(days=users.INVITATION_DAYS - 1)
    assert open_invitation(token) == invitation
    assert users.accept_invitation(token, GOOD, GOOD) == user
    user.refresh_from_db()
    assert user.check_password(GOOD)
    # Single use.
    assert open_invitation(token) is None
    with pytest.raises(users.UserError, match="expired or was already used") as refused:
        users.accept_invitation(token, "another passphrase 8", "another passphrase 8")
    assert refused.value.status == 410


def test_a_link_expires_and_a_new_one_replaces_the_open_one(admin):
    user = users.create_user(admin, "late")
    first, _ = users.invite(admin, user)
    second, _ = users.invite(admin, user)
    assert open_invitation(first) is None and open_invitation(second) is not None
    Invitation.objects.filter(user=user).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(users.UserError, match="expired"):
        users.accept_invitation(second, GOOD, GOOD)
    assert open_invitation("") is None and open_invitation("x" * 500) is None


def test_passwords_go_through_the_validators(admin):
    user = users.create_user(admin, "picky")
    token, _ = users.invite(admin, user)
    with pytest.raises(users.UserError, match="differ"):
        users.accept_invitation(token, GOOD, GOOD + "!")
    with pytest.raises(users.UserError, match="too short"):
        users.accept_invitation(token, "abc", "abc")
    with pytest.raises(users.UserError, match="too common"):
        users.accept_invitation(token, "password123", "password123")
    with pytest.raises(users.UserError, match="Type the new password"):
        users.accept_invitation(token, "", "")
    assert open_invitation(token) is not None  # a refused try does not use the link up


def test_deactivating_closes_the_links_and_reactivating_needs_a_new_one(admin):
    user = users.create_user(admin, "leaver")
    token, _ = users.invite(admin, user)
    users.set_active(admin, user, False)
    user.refresh_from_db()
    assert not user.is_active and open_invitation(token) is None
    with pytest.raises(users.UserError, match="deactivated"):
        users.invite(admin, user)
    users.set_active(admin, user, True)
    assert get_user_model().objects.get(pk=user.pk).is_active
    assert open_invitation(token) is None
    with pytest.raises(users.UserError, match="cannot deactivate yourself"):
        users.set_active(admin, admin, False)


def test_names_are_checked(admin):
    users.create_user(admin, "Taken")
    for name, says in (("taken", "already a user"), ("", "Choose a username"), ("a b", "Choose")):
        with pytest.raises(users.UserError, match=says):
            users.create_user(admin, name)


def test_only_admins_manage_users(admin, make_user):
    someone = make_user()
    with pytest.raises(Forbidden):
        users.create_user(someone, "sneaky")
    with pytest.raises(Forbidden):
        users.invite(someone, someone)
    with pytest.raises(Forbidden):
        users.set_active(someone, admin, False)
    assert users.create_user(admin, "made-as-admin", admin=True).is_staff


def test_a_user_changes_their_own_password(make_user):
    user = make_user()
    with pytest.raises(users.UserError, match="current password is not right"):
        users.change_password(user, "wrong", GOOD, GOOD)
    with pytest.raises(users.UserError, match="differ"):
        users.change_password(user, user.raw_password, GOOD, "other")
    users.change_password(user, user.raw_password, GOOD, GOOD)
    user.refresh_from_db()
    assert user.check_password(GOOD)


def test_admins_make_others_admins_never_themselves(admin, make_user):
    user = make_user()
    users.set_admin(admin, user, True)
    user.refresh_from_db()
    assert user.is_staff
    users.set_admin(admin, user, False)
    user.refresh_from_db()
    assert not user.is_staff
    with pytest.raises(users.UserError, match="your own admin right"):
        users.set_admin(admin, admin, False)
    with pytest.raises(users.UserError, match="superuser"):
        users.set_admin(admin, make_user(is_superuser=True), False)
    with pytest.raises(Forbidden):
        users.set_admin(user, user, True)
