"""Users in the app, in a real browser: an admin adds a user whose invitation link sets a
password and logs in (once); a user changes their own password; a non-admin gets 403 on
the admin pages; a deactivated user cannot log in, and their open page loses its login."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from playwright.sync_api import expect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

NEW_PASSWORD = "a long fresh passphrase 7"


def _server_password(user, password: str = "an old passphrase 123"):
    """Give a user a password the server checks: the tests' own hasher (MD5, for speed) is
    not among the server's."""
    hasher = PBKDF2PasswordHasher()
    user.password = hasher.encode(password, hasher.salt())
    user.save(update_fields=["password"])
    user.raw_password = password
    return user


def _log_in(page, username: str, password: str) -> None:
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("form button[type=submit]")


def test_an_invitation_link_sets_a_password_and_logs_in(page_for, make_user):
    admin = make_user("users-admin", is_staff=True)
    page = page_for(admin)
    page.goto("/users/")
    page.fill("#users-create-username", "newcomer")
    page.fill("#users-create-email", "newcomer@example.org")
    page.click("#users-create button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Created newcomer")
    link = page.locator("#invitation-link").input_value()
    assert "/invite/" in link
    # The copy button puts the link on the clipboard and says so.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.click("#invitation-copy")
    expect(page.locator("#invitation-copy")).to_contain_text("Copied")
    assert page.evaluate("() => navigator.clipboard.readText()") == link
    row = page.locator('#users-table tr[data-user="newcomer"]')
    expect(row.locator(".user-status")).to_contain_text("invited")
    newcomer = get_user_model().objects.get(username="newcomer")
    assert not newcomer.has_usable_password()
    # The link is shown once.
    page.reload()
    expect(page.locator("#invitation-link")).to_have_count(0)

    visitor = page_for(None)
    visitor.goto(link)
    expect(visitor.locator("#invitation-page h1")).to_have_text("Welcome, newcomer")
    visitor.fill("#invitation-password", NEW_PASSWORD)
    visitor.fill("#invitation-again", "not the same")
    visitor.click("#invitation-form button[type=submit]")
    expect(visitor.locator("#invitation-error")).to_contain_text("differ")
    visitor.fill("#invitation-password", NEW_PASSWORD)
    visitor.fill("#invitation-again", NEW_PASSWORD)
    visitor.click("#invitation-form button[type=submit]")
    expect(visitor.locator(".messages")).to_contain_text("Welcome, newcomer")
    expect(visitor.locator(".topbar .who")).to_have_text("newcomer")
    newcomer.refresh_from_db()
    assert newcomer.has_usable_password()  # (the server's hasher: the login below checks it)

    # Used once: the link now says so, and the password logs in.
    other = page_for(None)
    answer = other.goto(link)
    assert answer is not None and answer.status == 410
    expect(other.locator("#invitation-page h1")).to_have_text("This link no longer works")
    _log_in(other, "newcomer", NEW_PASSWORD)
    expect(other.locator(".topbar .who")).to_have_text("newcomer")


def test_a_user_changes_their_password(page_for, make_user):
    user = _server_password(make_user("changer"))
    page = page_for(user)
    page.goto("/")
    page.click(".topbar .nav-account")
    expect(page.locator("#password-page")).to_be_visible()
    page.fill("#password-current", "wrong")
    page.fill("#password-new", NEW_PASSWORD)
    page.fill("#password-again", NEW_PASSWORD)
    page.click("#password-form button[type=submit]")
    expect(page.locator("#password-error")).to_contain_text("current password is not right")
    page.fill("#password-current", user.raw_password)
    page.fill("#password-new", NEW_PASSWORD)
    page.fill("#password-again", NEW_PASSWORD)
    page.click("#password-form button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Your password is changed")
    # Still logged in on this page; the old password no longer logs in, the new one does.
    page.goto("/")
    expect(page.locator(".topbar .who")).to_have_text("changer")
    fresh = page_for(None)
    _log_in(fresh, "changer", user.raw_password)
    expect(fresh.locator("main p.error")).to_be_visible()
    _log_in(fresh, "changer", NEW_PASSWORD)
    expect(fresh.locator(".topbar .who")).to_have_text("changer")


def test_a_non_admin_gets_403_on_the_admin_pages(page_for, make_user):
    someone = make_user("not-an-admin")
    page = page_for(someone)
    page.goto("/")
    expect(page.locator(".topbar .nav-users")).to_have_count(0)
    answer = page.goto("/users/")
    assert answer is not None and answer.status == 403
    page.goto("/models/")
    expect(page.locator("#endpoint-form")).to_have_count(0)
    token = page.locator("#models-key input[name=csrfmiddlewaretoken]").input_value()
    for path, data in (
        ("/users/new/", {"username": "sneaky"}),
        (f"/users/{someone.pk}/invite/", {}),
        ("/models/endpoints/", {"provider": "x", "api": "openai-completions"}),
        ("/models/endpoints/remove/", {"provider": "x"}),
    ):
        answer = page.request.post(path, form={**data, "csrfmiddlewaretoken": token})
        assert answer.status == 403, path
    assert not get_user_model().objects.filter(username="sneaky").exists()


def test_a_deactivated_user_cannot_log_in(page_for, make_user):
    admin = make_user("deactivating-admin", is_staff=True)
    leaver = _server_password(make_user("leaver"))
    open_page = page_for(leaver)
    open_page.goto("/")
    expect(open_page.locator(".topbar .who")).to_have_text("leaver")

    page = page_for(admin)
    page.goto("/users/")
    page.locator('#users-table tr[data-user="leaver"] button', has_text="Deactivate").click()
    expect(page.locator(".messages")).to_contain_text("Deactivated leaver")
    row = page.locator('#users-table tr[data-user="leaver"]')
    expect(row.locator(".user-status")).to_contain_text("deactivated")
    # No deactivating oneself.
    expect(
        page.locator(
            '#users-table tr[data-user="deactivating-admin"] button', has_text="Deactivate"
        )
    ).to_have_count(0)

    fresh = page_for(None)
    _log_in(fresh, "leaver", leaver.raw_password)
    expect(fresh.locator("main p.error")).to_be_visible()
    assert fresh.url.endswith("/login/")
    open_page.reload()  # the open page's login is gone too
    assert "/login/" in open_page.url

    row.locator("button", has_text="Reactivate").click()
    expect(page.locator(".messages")).to_contain_text("Reactivated leaver")
    _log_in(fresh, "leaver", leaver.raw_password)
    expect(fresh.locator(".topbar .who")).to_have_text("leaver")


def test_the_new_pages_fit_a_phone_in_both_themes(page_for, make_user):
    """At 390 px the Users page (with a fresh invitation link), the admin's Models page
    (with an endpoint), the account page and an invitation page never scroll sideways."""
    from sessions_app.services import endpoints, users

    admin = make_user("phone-admin", is_staff=True)
    endpoints.save_endpoint(
        admin,
        "a-rather-long-provider-name-for-a-phone",
        "openai-completions",
        "http://a-long-host-name.internal.example.org:11434/v1/and/a/long/path",
        "a-model-with-a-very-long-identifier-that-goes-on:latest, 128k, 8k, 1.5, 3",
        "sk-a-key-for-the-phone-0001",
    )
    invitation, _ = users.invite(admin, users.create_user(admin, "phone-invited"))
    page = page_for(admin)
    page.set_viewport_size({"width": 390, "height": 844})
    visitor = page_for(None)
    visitor.set_viewport_size({"width": 390, "height": 844})
    page.goto("/users/")
    page.fill("#users-create-username", "phone-added")
    page.click("#users-create button[type=submit]")
    expect(page.locator("#invitation-link")).to_be_visible()
    for scheme in ("light", "dark"):
        for where, path in (
            (page, None),  # the Users page with its link, as the form left it
            (page, "/models/"),
            (page, "/account/password/"),
            (visitor, f"/invite/{invitation}/"),
        ):
            where.emulate_media(color_scheme=scheme)
            if path is not None:
                where.goto(path)
            if path == "/models/":  # the providers without a key unfolded, too
                where.click("#models-providers-table details.more-rows > summary")
            wide = where.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            assert wide <= 1, (scheme, path or "/users/", wide)
        page.goto("/users/")
        expect(page.locator('#users-table tr[data-user="phone-added"]')).to_be_visible()
