"""The users views (sessions_app/views/users.py): the Users page shows a new invitation
link once; the link's page sets the password and logs in, then answers 410; the account
page changes the password and keeps the login; errors are said on the page."""

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from sessions_app.services import users
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db]

GOOD = "a long fresh passphrase 7"


def said(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_the_users_page_shows_a_new_link_once(make_user):
    admin = client_for(make_user(is_staff=True))
    response = admin.post(reverse("sessions_app:users_create"), {"username": "fresh"}, follow=True)
    assert said(response) == ["Created fresh: copy their invitation link at the top of the page."]
    page = response.content.decode()
    assert 'id="invitation-link"' in page and "http://testserver/invite/" in page
    assert 'id="invitation-link"' not in admin.get(reverse("sessions_app:users")).content.decode()
    response = admin.post(reverse("sessions_app:users_create"), {"username": "fresh"}, follow=True)
    assert said(response) == ["There is already a user fresh."]
    assert 'id="invitation-link"' not in response.content.decode()


def test_the_invitation_page_sets_the_password_and_logs_in_once(make_user):
    admin = make_user(is_staff=True)
    token, _ = users.invite(admin, users.create_user(admin, "invitee"))
    url = reverse("sessions_app:invitation", args=[token])
    visitor = Client()
    assert "Welcome, invitee" in visitor.get(url).content.decode()
    refused = visitor.post(url, {"password": GOOD, "again": "nope"})
    assert refused.status_code == 400 and "The two passwords differ." in refused.content.decode()
    response = visitor.post(url, {"password": GOOD, "again": GOOD})
    assert response.status_code == 302 and response["Location"] == "/"
    assert visitor.get("/").context["user"].username == "invitee"
    gone = Client().get(url)
    assert gone.status_code == 410 and "no longer works" in gone.content.decode()
    assert Client().post(url, {"password": GOOD, "again": GOOD}).status_code == 410


def test_the_account_page_changes_the_password_and_keeps_the_login(make_user):
    user = make_user()
    client = client_for(user)
    url = reverse("sessions_app:password")
    assert client.get(url).status_code == 200
    refused = client.post(url, {"current": "wrong", "password": GOOD, "again": GOOD})
    assert refused.status_code == 400 and "not right" in refused.content.decode()
    response = client.post(
        url, {"current": user.raw_password, "password": GOOD, "again": GOOD}, follow=True
    )
    assert said(response) == ["Your password is changed."]
    assert client.get("/").status_code == 200  # still logged in
    user.refresh_from_db()
    assert user.check_password(GOOD)


def test_a_bad_user_id_is_a_404_for_an_admin(make_user):
    admin = client_for(make_user(is_staff=True))
    assert admin.post(reverse("sessions_app:users_invite", args=[987654])).status_code == 404
    assert admin.post(reverse("sessions_app:users_active", args=[987654])).status_code == 404


def test_making_an_admin_says_so(make_user):
    admin = client_for(make_user(is_staff=True))
    user = make_user("promoted")
    url = reverse("sessions_app:users_admin", args=[user.pk])
    response = admin.post(url, {"admin": "1"}, follow=True)
    assert said(response) == ["promoted is now an admin."]
    assert "Remove admin" in response.content.decode()
    response = admin.post(url, {"admin": "0"}, follow=True)
    assert said(response) == ["promoted is no longer an admin."]
