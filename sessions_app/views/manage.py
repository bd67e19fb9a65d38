"""Managing a session from the app: rename (a session_info entry, as pi), pin, archive,
tags, delete. Plain POST forms that go back where they came from (`next`, a path of this
site), so they work from the sessions list and from the session page alike."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from sessions_app.services import manage
from sessions_app.services.access import EDITOR, OWNER, check_access


def _back(request, session_id: str):
    target = request.POST.get("next") or reverse("sessions_app:session_detail", args=[session_id])
    if not url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        target = reverse("sessions_app:session_list")
    return redirect(target)


def _flag(value) -> bool:
    return str(value or "").lower() in ("1", "true", "on", "yes")


@login_required
@require_POST
def rename(request, session_id):
    access = check_access(request.user, session_id, EDITOR)
    manage.rename(access.session, request.POST.get("name", ""), actor=request.user)
    return _back(request, session_id)


@login_required
@require_POST
def pin(request, session_id):
    access = check_access(request.user, session_id, EDITOR)
    manage.set_pinned(access.session, _flag(request.POST.get("pinned")), actor=request.user)
    return _back(request, session_id)


@login_required
@require_POST
def archive(request, session_id):
    access = check_access(request.user, session_id, EDITOR)
    manage.set_archived(access.session, _flag(request.POST.get("archived")), actor=request.user)
    return _back(request, session_id)


@login_required
@require_POST
def tags(request, session_id):
    access = check_access(request.user, session_id, EDITOR)
    try:
        manage.set_tags(access.session, request.POST.get("tags", ""), actor=request.user)
    except manage.ManageError as exc:
        messages.error(request, str(exc))
    return _back(request, session_id)


@login_required
@require_POST
def delete(request, session_id):
    access = check_access(request.user, session_id, OWNER)
    try:
        manage.delete_session(
            access.session, actor=request.user, confirm=request.POST.get("confirm")
        )
    except manage.ManageError as exc:
        messages.error(request, str(exc))
        return redirect(reverse("sessions_app:session_detail", args=[session_id]))
    messages.success(request, f"Deleted the session {session_id[:8]}.")
    return redirect(reverse("sessions_app:session_list"))
