"""Comments: threads on an entry, resolving them, the counts on the tree and the list of
open comments.

Every view goes through access.check_access; thin: parse input, call a service, render.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from sessions_app.params import int_or_none
from sessions_app.selectors.comments import (
    comment_totals,
    open_comment_counts_by_pi_id,
    open_threads,
    threads_for_entry,
)
from sessions_app.selectors.entries import find_entry
from sessions_app.services import comments as comments_service
from sessions_app.services.access import VIEWER, check_access


def _mark_resolvable(request, access, threads) -> None:
    for thread in threads:
        thread.can_resolve = access.can_comment and comments_service.may_resolve(
            thread, request.user, access.can_edit
        )


def _comments_context(request, access, entry_pi_id: str | None, error: str = ""):
    entry = find_entry(access.session, entry_pi_id, "pk", "pi_id", "preview", "type", "role")
    threads = threads_for_entry(access.session, entry.pi_id) if entry else []
    _mark_resolvable(request, access, threads)
    return {
        "access": access,
        "session": access.session,
        "entry": entry,
        "threads": threads,
        "error": error,
    }


@login_required
@require_GET
def entry_comments(request, session_id):
    access = check_access(request.user, session_id, VIEWER)
    entry_pi_id = request.GET.get("entry") or None
    context = _comments_context(request, access, entry_pi_id)
    if entry_pi_id and context["entry"] is None:
        raise Http404("No such entry in this session.")
    return render(request, "sessions_app/comments/_comments.html", context)


@login_required
@require_POST
def add_comment(request, session_id):
    access = check_access(request.user, session_id, VIEWER)
    if not access.can_comment:
        raise PermissionDenied("Share-link visitors cannot comment.")
    entry_pi_id = request.POST.get("entry", "")
    try:
        comments_service.add_comment(
            access.session,
            entry_pi_id,
            request.user,
            request.POST.get("body", ""),
            reply_to=int_or_none(request.POST.get("reply_to")),
        )
        error = ""
    except comments_service.CommentError as exc:
        error = str(exc)
    context = _comments_context(request, access, entry_pi_id, error)
    if context["entry"] is None:
        raise Http404("No such entry in this session.")
    response = render(
        request, "sessions_app/comments/_comments.html", context, status=400 if error else 200
    )
    if not error:
        trigger_client_event(response, "piweb:comments-changed")
    return response


def _set_resolved(request, session_id, comment_id, resolved: bool):
    access = check_access(request.user, session_id, VIEWER)
    if not access.can_comment:
        raise PermissionDenied("Share-link visitors cannot resolve comments.")
    try:
        comment = comments_service.set_resolved(access.session, comment_id, request.user, resolved)
    except comments_service.CommentRightsError as exc:
        raise PermissionDenied(str(exc)) from exc
    except comments_service.CommentError as exc:
        raise Http404(str(exc)) from exc
    if request.POST.get("from") == "list":
        return redirect(reverse("sessions_app:review_list", args=[session_id]))
    context = _comments_context(request, access, comment.entry.pi_id)
    response = render(request, "sessions_app/comments/_comments.html", context)
    return trigger_client_event(response, "piweb:comments-changed")


@login_required
@require_POST
def resolve_comment(request, session_id, comment_id):
    return _set_resolved(request, session_id, comment_id, True)


@login_required
@require_POST
def reopen_comment(request, session_id, comment_id):
    return _set_resolved(request, session_id, comment_id, False)


@login_required
@require_GET
def comment_counts(request, session_id):
    """{entry pi_id: open threads} as JSON, for the tree's node markers."""
    access = check_access(request.user, session_id, VIEWER)
    return JsonResponse({"open": open_comment_counts_by_pi_id(access.session)})


@login_required
@require_GET
def review_list(request, session_id):
    access = check_access(request.user, session_id, VIEWER)
    threads = list(open_threads(access.session))
    _mark_resolvable(request, access, threads)
    return render(
        request,
        "sessions_app/comments/open_comments.html",
        {
            "access": access,
            "session": access.session,
            "threads": threads,
            "totals": comment_totals(access.session),
        },
    )
