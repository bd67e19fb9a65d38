"""Users in the app: the admins' Users page (create a user, deactivate or reactivate one,
make one an admin, make an invitation link), the invitation link that sets a password and logs in, and the
page where a user changes their own password. Plain POST forms; refusals come back as
messages, a non-admin gets 403 (services/users.py and selectors/users.py check)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import authenticate, login, update_session_auth_hash
from django.shortcuts import redirect, render
from django.urls import reverse

from sessions_app.params import form
from sessions_app.responses import piweb_view
from sessions_app.selectors.users import (
    is_admin,
    open_invitation,
    require_admin,
    user_for_admin,
    users_for_admin,
)
from sessions_app.services import users

# The link made last, shown once on the Users page (only its hash is stored).
_NEW_LINK = "piweb_invitation_link"


def admin_context(request) -> dict:
    """`is_piweb_admin` for base.html's menu; a context processor (piweb/settings.py)."""
    return {"is_piweb_admin": is_admin(getattr(request, "user", None))}


def _link(request, token: str, username: str) -> None:
    url = request.build_absolute_uri(reverse("sessions_app:invitation", args=[token]))
    request.session[_NEW_LINK] = {"url": url, "username": username}


@piweb_view()
def users_page(request):
    rows = users_for_admin(request.user)
    return render(
        request,
        "sessions_app/users/page.html",
        {
            "rows": rows,
            "new_link": request.session.pop(_NEW_LINK, None),
            "days": users.INVITATION_DAYS,
        },
    )


@piweb_view(methods=("POST",))
def create(request):
    require_admin(request.user)
    params = form(request)
    try:
        user = users.create_user(
            request.user,
            params.text("username", limit=200),
            email=params.text("email", limit=300),
            admin=params.flag("admin"),
        )
        token, _ = users.invite(request.user, user)
    except users.UserError as exc:  # a message on the Users page
        messages.error(request, str(exc))
    else:
        _link(request, token, user.get_username())
        messages.success(
            request,
            f"Created {user.get_username()}: copy their invitation link at the top of the page.",
        )
    return redirect("sessions_app:users")


@piweb_view(methods=("POST",))
def set_active(request, user_id: int):
    user = user_for_admin(request.user, user_id)
    active = form(request).flag("active")
    try:
        users.set_active(request.user, user, active)
    except users.UserError as exc:
        messages.error(request, str(exc))
    else:
        done = "Reactivated" if active else "Deactivated"
        messages.success(request, f"{done} {user.get_username()}.")
    return redirect("sessions_app:users")


@piweb_view(methods=("POST",))
def set_admin(request, user_id: int):
    user = user_for_admin(request.user, user_id)
    admin = form(request).flag("admin")
    try:
        users.set_admin(request.user, user, admin)
    except users.UserError as exc:
        messages.error(request, str(exc))
    else:
        done = "is now an admin" if admin else "is no longer an admin"
        messages.success(request, f"{user.get_username()} {done}.")
    return redirect("sessions_app:users")


@piweb_view(methods=("POST",))
def invite(request, user_id: int):
    user = user_for_admin(request.user, user_id)
    try:
        token, _ = users.invite(request.user, user)
    except users.UserError as exc:
        messages.error(request, str(exc))
    else:
        _link(request, token, user.get_username())
        messages.success(request, f"Made a new invitation link for {user.get_username()}.")
    return redirect("sessions_app:users")


@piweb_view(methods=("GET", "POST"), login=False)
def accept_invitation(request, token: str):
    """The invitation link: a form that sets the password, then logs in. Anyone holding
    the link may use it (that is what it is for), once, until it expires."""
    invitation = open_invitation(token)
    if invitation is None:
        return render(request, "sessions_app/users/invitation.html", {"gone": True}, status=410)
    error = ""
    if request.method == "POST":
        params = form(request)
        try:
            user = users.accept_invitation(
                token, params.text("password", limit=4096), params.text("again", limit=4096)
            )
        except users.UserError as exc:
            error = str(exc)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"Welcome, {user.get_username()}: your password is set.")
            return redirect("sessions_app:session_list")
    return render(
        request,
        "sessions_app/users/invitation.html",
        {"invited": invitation.user, "error": error},
        status=400 if error else 200,
    )


def _current_password_right(request, current: str) -> bool:
    """The current password, checked the way a log-in is (django.contrib.auth.authenticate):
    a wrong one counts as a failed log-in for django-axes, and once the limit is reached
    AxesMiddleware answers with the lockout page, here as on the login form; while locked
    out even the right password is refused. A guesser holding someone's open session
    cannot try more passwords here than at the login form."""
    found = authenticate(request, username=request.user.get_username(), password=current)
    return found is not None and found.pk == request.user.pk


@piweb_view(methods=("GET", "POST"))
def password(request):
    error = ""
    if request.method == "POST":
        params = form(request)
        current = params.text("current", limit=4096)
        try:
            if not _current_password_right(request, current):
                raise users.UserError("Your current password is not right.")
            users.change_password(
                request.user,
                current,
                params.text("password", limit=4096),
                params.text("again", limit=4096),
            )
        except users.UserError as exc:
            error = str(exc)
        else:
            update_session_auth_hash(request, request.user)  # stays logged in here
            messages.success(request, "Your password is changed.")
            return redirect("sessions_app:password")
    return render(
        request, "sessions_app/users/password.html", {"error": error}, status=400 if error else 200
    )
