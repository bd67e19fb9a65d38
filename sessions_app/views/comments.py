"""Comments: threads on an entry, resolving them, the counts on the tree and the list of
open comments.

Every view goes through the gate (`responses.session_view`); thin: parse input, call a
service, render.
"""

from __future__ import annotations

from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django_htmx.http import trigger_client_event

from sessions_app.params import form, query
from sessions_app.responses import COMMENTER, session_view
from sessions_app.selectors.comments import (
    comment_totals,
    open_comment_counts_by_pi_id,
    open_threads,
    threads_for_entry,
)
from sessions_app.selectors.entries import find_entry
from sessions_app.services import comments as comments_service


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


@session_view()
def entry_comments(request, access):
    entry_pi_id = query(request).optional("entry")
    context = _comments_context(request, access, entry_pi_id)
    if entry_pi_id and context["entry"] is None:
        raise Http404("No such entry in this session.")
    return render(request, "sessions_app/comments/_comments.html", context)


@session_view(COMMENTER, methods=("POST",))
def add_comment(request, access):
    params = form(request)
    entry_pi_id = params.text("entry")
    try:
        comments_service.add_comment(
            access.session,
            entry_pi_id,
            request.user,
            params.text("body"),
            reply_to=params.integer("reply_to"),
        )
        error = ""
    except comments_service.CommentError as exc:  # shown in the thread's form
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


def _set_resolved(request, access, comment_id, resolved: bool):
    comment = comments_service.set_resolved(access.session, comment_id, request.user, resolved)
    if form(request).text("from") == "list":
        return redirect(reverse("sessions_app:review_list", args=[access.session.pi_id]))
    context = _comments_context(request, access, comment.entry.pi_id)
    response = render(request, "sessions_app/comments/_comments.html", context)
    return trigger_client_event(response, "piweb:comments-changed")


@session_view(COMMENTER, methods=("POST",))
def resolve_comment(request, access, comment_id):
    return _set_resolved(request, access, comment_id, True)


@session_view(COMMENTER, methods=("POST",))
def reopen_comment(request, access, comment_id):
    return _set_resolved(request, access, comment_id, False)


@session_view()
def comment_counts(request, access):
    """{entry pi_id: open threads} as JSON, for the tree's node markers."""
    return JsonResponse({"open": open_comment_counts_by_pi_id(access.session)})


@session_view()
def review_list(request, access):
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
