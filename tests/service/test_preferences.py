"""services/preferences.py: the theme is stored on the user, one row per user, and a
wrong value is refused with nothing changed; every page renders it on <html>."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.models import DisplayPreference
from sessions_app.selectors.preferences import theme_for
from sessions_app.services import preferences

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]


def test_a_user_who_never_chose_follows_the_system(make_user):
    assert theme_for(make_user()) == "system"


def test_the_choice_is_stored_once_per_user_and_changes_in_place(make_user):
    user, other = make_user(), make_user()
    preferences.set_theme(user, "dark")
    preferences.set_theme(user, "light")
    assert theme_for(user) == "light"
    assert theme_for(other) == "system"
    assert DisplayPreference.objects.filter(user=user).count() == 1


def test_an_unknown_theme_is_refused_and_the_choice_kept(make_user):
    user = make_user()
    preferences.set_theme(user, "dark")
    with pytest.raises(preferences.PreferenceError, match="Unknown theme: sepia"):
        preferences.set_theme(user, "sepia")
    assert theme_for(user) == "dark"


def test_every_page_renders_the_stored_theme_on_html(make_user):
    user = make_user()
    client = Client()
    client.force_login(user)
    assert 'data-theme="system"' in client.get("/").content.decode()
    answer = client.post("/preferences/theme/", {"theme": "dark", "next": "/usage/"})
    assert answer.status_code == 302 and answer["Location"] == "/usage/"
    assert 'data-theme="dark"' in client.get("/models/").content.decode()
    assert 'aria-pressed="true"><svg class="icon icon-moon"' in client.get("/").content.decode()


def test_the_theme_form_refuses_a_bad_value_and_an_outside_redirect(make_user):
    client = Client()
    client.force_login(make_user())
    assert client.post("/preferences/theme/", {"theme": "neon"}).status_code == 400
    answer = client.post("/preferences/theme/", {"theme": "light", "next": "https://evil.test/"})
    assert answer["Location"] == "/"
    htmx = client.post("/preferences/theme/", {"theme": "dark"}, headers={"HX-Request": "true"})
    assert htmx.status_code == 204


def test_the_login_page_follows_the_system(client):
    assert 'data-theme="system"' in client.get("/login/").content.decode()
