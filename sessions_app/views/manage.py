"""Managing a session from the app: rename (a session_info entry, as pi), pin, archive,
tags, delete. Plain POST forms that go back where they came from (`next`, a path of this
site), so they work from the sessions list and from the session page alike."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from sessions_app.params import form
from sessions_app.responses import notice, session_view
from sessions_app.selectors.access import EDITOR, OWNER
from sessions_app.services import manage


def _back(request, session_id: str):
    target = form(request).text("next") or reverse("sessions_app:session_detail", args=[session_id])
    if not url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        target = reverse("sessions_app:session_list")
    return redirect(target)


@session_view(EDITOR, methods=("POST",))
def rename(request, access):
    """The header's form (a plain POST, back to the page) and the chat box's /name (htmx:
    the notice, and `session-renamed` for the page's title)."""
    name = form(request).text("name")
    manage.rename(access.session, name, actor=request.user)
    if request.htmx:
        access.session.refresh_from_db()
        shown = access.session.name or name
        return notice(
            request,
            f"Renamed: {shown}",
            level="ok",
            triggers={"piweb:session-renamed": {"name": shown}},
        )
    return _back(request, access.session.pi_id)


@session_view(EDITOR, methods=("POST",))
def pin(request, access):
    manage.set_pinned(access.session, form(request).flag("pinned"), actor=request.user)
    return _back(request, access.session.pi_id)


@session_view(EDITOR, methods=("POST",))
def archive(request, access):
    manage.set_archived(access.session, form(request).flag("archived"), actor=request.user)
    return _back(request, access.session.pi_id)


@session_view(EDITOR, methods=("POST",))
def tags(request, access):
    try:
        manage.set_tags(access.session, form(request).text("tags"), actor=request.user)
    except manage.ManageError as exc:  # a message on the page it goes back to
        messages.error(request, str(exc))
    return _back(request, access.session.pi_id)


@session_view(OWNER, methods=("POST",))
def delete(request, access):
    session_id = access.session.pi_id
    try:
        manage.delete_session(
            access.session, actor=request.user, confirm=form(request).text("confirm")
        )
    except manage.ManageError as exc:  # a message on the session page
        messages.error(request, str(exc))
        return redirect(reverse("sessions_app:session_detail", args=[session_id]))
    messages.success(request, f"Deleted the session {session_id[:8]}.")
    return redirect(reverse("sessions_app:session_list"))
