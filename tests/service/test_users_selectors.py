"""selectors/users.py: who is an admin (staff, superusers, everyone in single-user mode;
never an inactive or anonymous user), the Users page's rows, and an invitation only while
it can be used."""

import pytest
from django.contrib.auth.models import AnonymousUser

from sessions_app.core.errors import Forbidden, NotFound
from sessions_app.selectors.users import (
    is_admin,
    open_invitation,
    user_for_admin,
    users_for_admin,
)
from sessions_app.services import users

pytestmark = pytest.mark.django_db


def test_who_is_an_admin(make_user, settings):
    settings.PIWEB_WORKSPACE_MODE = "multi-user"
    staff, boss, plain = (
        make_user(is_staff=True),
        make_user(is_superuser=True),
        make_user(),
    )
    assert is_admin(staff) and is_admin(boss) and not is_admin(plain)
    assert not is_admin(AnonymousUser()) and not is_admin(None)
    staff.is_active = False
    assert not is_admin(staff)
    settings.PIWEB_WORKSPACE_MODE = "single-user"
    assert is_admin(plain) and not is_admin(AnonymousUser())


def test_the_users_pages_rows(make_user, settings):
    settings.PIWEB_WORKSPACE_MODE = "multi-user"
    admin = make_user("rows-admin", is_staff=True)
    invited = users.create_user(admin, "rows-invited")
    token, invitation = users.invite(admin, invited)
    rows = {r["user"].username: r for r in users_for_admin(admin)}
    assert rows["rows-admin"]["is_self"] and rows["rows-admin"]["invited_until"] is None
    assert rows["rows-invited"]["invited_until"] == invitation.expires_at
    assert user_for_admin(admin, invited.pk) == invited
    with pytest.raises(NotFound):
        user_for_admin(admin, 987654)
    with pytest.raises(Forbidden):
        users_for_admin(invited)
    with pytest.raises(Forbidden):
        user_for_admin(invited, admin.pk)
    # An invitation of a user deactivated meanwhile opens nothing.
    invited.is_active = False
    invited.save()
    assert open_invitation(token) is None
