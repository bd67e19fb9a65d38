"""Login throttling (django-axes): the way the attack found it, 40 wrong passwords in a
row, then the right one, through the real login form; per username and per address; the
cool-down, the administrator's unlock, and the client address behind a reverse proxy."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.test import Client, RequestFactory
from django.urls import reverse

from piweb.login_throttle import client_ip

pytestmark = pytest.mark.django_db

ALICE_IP, BOB_IP = "203.0.113.7", "198.51.100.9"


def log_in(username, password, ip=ALICE_IP, **meta):
    client = Client(REMOTE_ADDR=ip, **meta)
    response = client.post(reverse("login"), {"username": username, "password": password})
    home = client.get(reverse("sessions_app:session_list"))
    return response, home.status_code == 200


@pytest.fixture
def alice(make_user):
    return make_user("alice", password="alice-right-pw")


@pytest.fixture
def bob(make_user):
    return make_user("bob", password="bob-right-pw")


def hammer(username="alice", ip=ALICE_IP, times=None, **meta):
    """Wrong passwords: as many as the limit, or `times`."""
    from django.conf import settings

    times = settings.AXES_FAILURE_LIMIT if times is None else times
    for _ in range(times):
        response, logged_in = log_in(username, "wrong", ip, **meta)
        assert not logged_in
    return response


@pytest.mark.embedded
def test_forty_wrong_passwords_then_the_right_one_is_refused_with_the_reason(alice, settings):
    last = hammer(times=40)  # as the attack did
    assert last.status_code == 429
    response, logged_in = log_in("alice", "alice-right-pw")
    assert not logged_in and response.status_code == 429
    page = response.content.decode()
    assert "Too many failed log-ins" in page
    assert f"Try again in {settings.PIWEB_LOGIN_COOLOFF_MINUTES:.0f} minutes" in page
    assert "axes_reset_username" in page


def test_below_the_limit_the_right_password_still_works(alice, settings):
    hammer(times=settings.PIWEB_LOGIN_FAILURE_LIMIT - 1)
    assert log_in("alice", "alice-right-pw")[1]


def test_after_the_cool_down_the_right_password_works_again(alice, settings):
    hammer()
    assert not log_in("alice", "alice-right-pw")[1]
    # The cool-down is counted from the last failure: make that failure older than it.
    past = timedelta(minutes=settings.PIWEB_LOGIN_COOLOFF_MINUTES, seconds=5)
    for attempt in AccessAttempt.objects.all():
        AccessAttempt.objects.filter(pk=attempt.pk).update(attempt_time=attempt.attempt_time - past)
    assert log_in("alice", "alice-right-pw")[1]


@pytest.mark.parametrize(
    "command", [("axes_reset_username", "alice"), ("axes_reset_ip", ALICE_IP), ("axes_reset",)]
)
def test_an_administrator_unlocks_with_one_command(alice, bob, command):
    hammer()
    assert not log_in("alice", "alice-right-pw", ip=BOB_IP)[1]  # the username is locked
    assert not log_in("bob", "bob-right-pw", ip=ALICE_IP)[1]  # and the address
    call_command(*command)
    # axes keeps one record per (username, address): either command clears the lock
    assert log_in("alice", "alice-right-pw", ip=BOB_IP)[1]
    assert log_in("bob", "bob-right-pw", ip=ALICE_IP)[1]


def test_per_username_and_per_address_others_are_unaffected(alice, bob):
    hammer()
    assert log_in("bob", "bob-right-pw", ip=BOB_IP)[1]  # another user, another address
    assert not log_in("bob", "bob-right-pw", ip=ALICE_IP)[1]  # the address is locked
    assert not log_in("alice", "alice-right-pw", ip=BOB_IP)[1]  # the username is locked


def test_locking_the_pair_only_leaves_the_user_free_elsewhere(alice, bob, settings):
    settings.AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
    hammer()
    assert not log_in("alice", "alice-right-pw")[1]
    assert log_in("alice", "alice-right-pw", ip=BOB_IP)[1]
    assert log_in("bob", "bob-right-pw", ip=ALICE_IP)[1]


def test_behind_a_trusted_proxy_the_forwarded_client_is_counted(alice, bob, settings):
    settings.PIWEB_TRUSTED_PROXIES = ["10.0.0.0/8"]
    proxy = "10.0.0.2"
    hammer(ip=proxy, HTTP_X_FORWARDED_FOR=f"{ALICE_IP}, 10.0.0.1")
    # bob through the same proxy from his own address is not locked by alice's failures
    assert log_in("bob", "bob-right-pw", ip=proxy, HTTP_X_FORWARDED_FOR=BOB_IP)[1]
    assert not log_in("bob", "bob-right-pw", ip=proxy, HTTP_X_FORWARDED_FOR=ALICE_IP)[1]


def test_a_direct_client_cannot_pick_its_address_with_the_header(alice, bob, settings):
    settings.PIWEB_TRUSTED_PROXIES = ["10.0.0.0/8"]
    for n in range(settings.AXES_FAILURE_LIMIT):  # a made-up address each time: the peer counts
        log_in("alice", "wrong", ip=ALICE_IP, HTTP_X_FORWARDED_FOR=f"192.0.2.{n}")
    assert not log_in("bob", "bob-right-pw", ip=ALICE_IP, HTTP_X_FORWARDED_FOR="192.0.2.200")[1]


def test_client_ip_rules(settings):
    rf = RequestFactory()
    settings.PIWEB_TRUSTED_PROXIES = []
    assert client_ip(rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="1.2.3.4")) == (
        "10.0.0.2"
    )
    settings.PIWEB_TRUSTED_PROXIES = ["10.0.0.0/8", "::1"]
    settings.PIWEB_CLIENT_IP_HEADER = "X-Real-IP"
    assert client_ip(rf.get("/", REMOTE_ADDR="::1", HTTP_X_REAL_IP="1.2.3.4")) == "1.2.3.4"
    assert client_ip(rf.get("/", REMOTE_ADDR="::1", HTTP_X_REAL_IP="not-an-ip")) == "::1"
    assert client_ip(rf.get("/", REMOTE_ADDR="::1")) == "::1"
    settings.PIWEB_CLIENT_IP_HEADER = "X-Forwarded-For"
    xff = "6.6.6.6, 1.2.3.4, 10.0.0.5"  # the left-most is whatever the client wrote
    assert client_ip(rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=xff)) == "1.2.3.4"


# --- the Account page's current password counts like a log-in (views/users.py) ---------

NEW_PW = "a long fresh passphrase 7"


def change_password(client, current):
    url = reverse("sessions_app:password")
    return client.post(url, {"current": current, "password": NEW_PW, "again": NEW_PW})


def signed_in(user, ip=ALICE_IP):
    client = Client(REMOTE_ADDR=ip)
    client.force_login(user)
    return client


@pytest.mark.embedded
def test_wrong_current_passwords_on_the_account_page_lock_the_log_in(alice, settings):
    client = signed_in(alice)
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        refused = change_password(client, "wrong")
        assert refused.status_code == 400 and "not right" in refused.content.decode()
    locked = change_password(client, "wrong")
    assert locked.status_code == 429 and "Too many failed log-ins" in locked.content.decode()
    # now even the right current password is refused, and the password stays as it was
    assert change_password(client, "alice-right-pw").status_code == 429
    alice.refresh_from_db()
    assert alice.check_password("alice-right-pw")
    # the login form refuses alice, from any address (the username is locked)
    assert not log_in("alice", "alice-right-pw", ip=BOB_IP)[1]


def test_account_page_and_login_form_failures_add_up(alice, settings):
    client = signed_in(alice)
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert change_password(client, "wrong").status_code == 400
    response, logged_in = log_in("alice", "wrong")
    assert not logged_in and response.status_code == 429
    assert not log_in("alice", "alice-right-pw")[1]


def test_below_the_limit_the_account_page_still_changes_the_password(alice, settings):
    client = signed_in(alice)
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert change_password(client, "wrong").status_code == 400
    assert change_password(client, "alice-right-pw").status_code == 302
    alice.refresh_from_db()
    assert alice.check_password(NEW_PW)
