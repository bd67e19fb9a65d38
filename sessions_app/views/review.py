"""Review area: comments, the review list, sharing (teams and links), the share-link page,
search, exports, branch compare and the activity list.

Every view goes through access.check_access (share-link views pass the token); thin:
parse input, call a service, render.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from sessions_app.models import Activity, Entry, Job, SessionShare, ShareLink
from sessions_app.rendering import page_budget
from sessions_app.services import comments as comments_service
from sessions_app.services import compare as compare_service
from sessions_app.services import exports, sharing
from sessions_app.services import search as search_service
from sessions_app.services.access import (
    EDITOR,
    OWNER,
    VIEWER,
    check_access,
    share_link_session_id,
)
from sessions_app.services.jobs import compare_summary as compare_jobs
from sessions_app.services.tree import UNSET

ACTIVITY_LIMIT = 100


def _bad_request(request, message: str, status: int = 400):
    """An error for the person: escaped HTML for an HTMX swap, else plain text. Messages
    may quote what was sent (an export format, an entry id): never as markup."""
    if request.htmx:
        return render(
            request, "sessions_app/review/_error.html", {"message": message}, status=status
        )
    return plain_text(message, status)


def plain_text(message: str, status: int) -> HttpResponse:
    response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# --- comments ---------------------------------------------------------------------------


def _mark_resolvable(request, access, threads) -> None:
    for thread in threads:
        thread.can_resolve = access.can_comment and comments_service.may_resolve(
            thread, request.user, access.can_edit
        )


def _comments_context(request, access, entry_pi_id: str | None, error: str = ""):
    entry = (
        Entry.objects.filter(session=access.session, pi_id=entry_pi_id)
        .only("pk", "pi_id", "preview", "type", "role")
        .first()
        if entry_pi_id
        else None
    )
    threads = comments_service.threads_for_entry(access.session, entry.pi_id) if entry else []
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
    return render(request, "sessions_app/review/_comments.html", context)


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
            reply_to=_int(request.POST.get("reply_to")),
        )
        error = ""
    except comments_service.CommentError as exc:
        error = str(exc)
    context = _comments_context(request, access, entry_pi_id, error)
    if context["entry"] is None:
        raise Http404("No such entry in this session.")
    response = render(
        request, "sessions_app/review/_comments.html", context, status=400 if error else 200
    )
    if not error:
        response["HX-Trigger"] = "piweb:comments-changed"
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
    response = render(request, "sessions_app/review/_comments.html", context)
    response["HX-Trigger"] = "piweb:comments-changed"
    return response


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
    from django.http import JsonResponse

    access = check_access(request.user, session_id, VIEWER)
    return JsonResponse({"open": comments_service.open_comment_counts_by_pi_id(access.session)})


@login_required
@require_GET
def review_list(request, session_id):
    access = check_access(request.user, session_id, VIEWER)
    threads = list(comments_service.open_threads(access.session))
    _mark_resolvable(request, access, threads)
    return render(
        request,
        "sessions_app/review/review_list.html",
        {
            "access": access,
            "session": access.session,
            "threads": threads,
            "totals": comments_service.comment_totals(access.session),
        },
    )


# --- activity ---------------------------------------------------------------------------


@login_required
@require_GET
def activity(request, session_id):
    access = check_access(request.user, session_id, VIEWER)
    items = Activity.objects.filter(session=access.session).select_related("actor")[:ACTIVITY_LIMIT]
    template = (
        "sessions_app/review/_activity.html"
        if request.htmx
        else "sessions_app/review/activity_page.html"
    )
    return render(
        request, template, {"access": access, "session": access.session, "activity": items}
    )


# --- sharing ----------------------------------------------------------------------------


def _sharing_page(request, access, error: str = "", new_link: ShareLink | None = None, status=200):
    session = access.session
    links = list(ShareLink.objects.filter(session=session).order_by("-created_at"))
    for link in links:
        link.state = sharing.link_state(link)
        link.url = request.build_absolute_uri(reverse("sessions_app:share_link", args=[link.token]))
    return render(
        request,
        "sessions_app/review/sharing.html",
        {
            "access": access,
            "session": session,
            "shares": SessionShare.objects.filter(session=session).select_related("team"),
            "teams": sharing.teams_for_sharing(request.user),
            "roles": SessionShare.Role.choices,
            "links": links,
            "new_link": new_link,
            "error": error,
            "leaf": request.GET.get("leaf") or (session.leaf.pi_id if session.leaf_id else ""),
            "scopes": ShareLink.Scope.choices,
            "target": request.GET.get("target", ""),
        },
        status=status,
    )


@login_required
@require_GET
def sharing_page(request, session_id):
    access = check_access(request.user, session_id, OWNER)
    return _sharing_page(request, access)


@login_required
@require_POST
def share_team(request, session_id):
    access = check_access(request.user, session_id, OWNER)
    try:
        sharing.share_with_team(
            access.session,
            _int(request.POST.get("team")) or 0,
            request.POST.get("role", ""),
            actor=request.user,
        )
    except sharing.SharingError as exc:
        return _sharing_page(request, access, str(exc), status=400)
    return redirect(reverse("sessions_app:sharing", args=[session_id]))


@login_required
@require_POST
def unshare_team(request, session_id, share_id):
    access = check_access(request.user, session_id, OWNER)
    try:
        sharing.unshare_team(access.session, share_id, actor=request.user)
    except sharing.SharingError as exc:
        raise Http404(str(exc)) from exc
    return redirect(reverse("sessions_app:sharing", args=[session_id]))


@login_required
@require_POST
def create_link(request, session_id):
    access = check_access(request.user, session_id, OWNER)
    try:
        link = sharing.create_link(
            access.session,
            actor=request.user,
            leaf_pi_id=request.POST.get("leaf") or None,
            target_pi_id=request.POST.get("target") or None,
            expires_in_days=request.POST.get("expires_in_days"),
            scope=request.POST.get("scope") or ShareLink.Scope.PATH,
        )
    except sharing.SharingError as exc:
        return _sharing_page(request, access, str(exc), status=400)
    link.url = request.build_absolute_uri(reverse("sessions_app:share_link", args=[link.token]))
    return _sharing_page(request, access, new_link=link)


@login_required
@require_POST
def revoke_link(request, session_id, link_id):
    access = check_access(request.user, session_id, OWNER)
    try:
        sharing.revoke_link(access.session, link_id, actor=request.user)
    except sharing.SharingError as exc:
        raise Http404(str(exc)) from exc
    return redirect(reverse("sessions_app:sharing", args=[session_id]))


# --- the share-link page (no login) -----------------------------------------------------


def _link_access(request, token: str):
    session_id = share_link_session_id(token)
    if session_id is None:
        raise Http404("No such link.")
    access = check_access(request.user, session_id, VIEWER, share_token=token)
    link = (
        access.share_link or ShareLink.objects.filter(token=token, session=access.session).first()
    )
    if link is None or sharing.link_state(link) != "active":
        # A member opening a dead link: the link is gone, whatever their own rights.
        raise Http404("This link was revoked or has expired.")
    return access, link


def _link_entry(request, name: str, visible: set[str]) -> str | None:
    """?leaf= / ?target= on a link page: only entries the link shows (else 404)."""
    value = request.GET.get(name) or None
    if value is not None and value not in visible:
        raise Http404("That entry is not on the shared branch.")
    return value


@require_GET
def share_link(request, token):
    access, link = _link_access(request, token)
    visible = sharing.link_visible_entry_ids(link)
    leaf = _link_entry(request, "leaf", visible) or link.leaf_pi_id
    target = _link_entry(request, "target", visible) or (
        link.target_pi_id if leaf == link.leaf_pi_id else leaf
    )
    view = exports.branch_view(
        access.session, leaf if leaf else UNSET, target, visible, budget=page_budget()
    )
    response = render(
        request,
        "sessions_app/review/share_page.html",
        {
            "access": access,
            "session": access.session,
            "link": link,
            "token": token,
            "view": view,
            "is_link_branch": view["leaf"] == link.leaf_pi_id,
        },
    )
    response["X-Robots-Tag"] = "noindex"
    response["Referrer-Policy"] = "no-referrer"
    return response


LINK_JSONL_REFUSED = (
    "A share link exports its branch as HTML or Markdown only: a pi JSONL file of one "
    "branch would be a fork, not the session. Ask the owner for access to the session."
)


@require_GET
def share_link_export(request, token, fmt):
    access, link = _link_access(request, token)
    if fmt == "jsonl":
        return plain_text(LINK_JSONL_REFUSED, 403)
    visible = sharing.link_visible_entry_ids(link)
    leaf = _link_entry(request, "leaf", visible) or link.leaf_pi_id
    return _export_response(request, access, fmt, leaf, visible)


# --- exports ----------------------------------------------------------------------------


def _export_response(request, access, fmt: str, leaf: str | None, visible: set | None = None):
    try:
        export = exports.export_session(
            access.session, fmt, leaf, actor=request.user, visible=visible
        )
    except exports.ExportError as exc:
        return _bad_request(request, str(exc))
    if export.streams:  # (the pi JSONL: never the whole file in memory)
        response = StreamingHttpResponse(export.content, content_type=export.content_type)
    else:
        response = HttpResponse(export.content, content_type=export.content_type)
    disposition = "inline" if request.GET.get("inline") == "1" and fmt != "html" else "attachment"
    response["Content-Disposition"] = f'{disposition}; filename="{export.filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@login_required
@require_GET
def export(request, session_id, fmt):
    access = check_access(request.user, session_id, VIEWER)
    return _export_response(request, access, fmt, request.GET.get("leaf") or None)


# --- compare ----------------------------------------------------------------------------


@login_required
@require_GET
def compare(request, session_id):
    access = check_access(request.user, session_id, VIEWER)
    a, b = request.GET.get("a", "").strip(), request.GET.get("b", "").strip()
    context = {"access": access, "session": access.session, "a": a, "b": b}
    status = 200
    if a and b:
        try:
            context["comparison"] = compare_service.compare(access.session, a, b, render=True)
            context["job"] = compare_jobs.latest_compare_job(access.session, a, b)
        except compare_service.CompareError as exc:
            context["error"] = str(exc)
            status = 400
    return render(request, "sessions_app/review/compare.html", context, status=status)


@login_required
@require_POST
def compare_summary(request, session_id):
    # A summary is a paid LLM job: editors and owners only.
    access = check_access(request.user, session_id, EDITOR)
    a, b = request.POST.get("a", ""), request.POST.get("b", "")
    try:
        job = compare_jobs.request_compare_summary(access.session, a, b, actor=request.user)
    except compare_service.CompareError as exc:
        return _bad_request(request, str(exc))
    if request.htmx:
        return render(
            request,
            "sessions_app/review/_compare_job.html",
            {"session": access.session, "job": job},
        )
    return redirect(
        reverse("sessions_app:compare", args=[session_id]) + "?" + urlencode({"a": a, "b": b})
    )


@login_required
@require_GET
def compare_job(request, session_id, job_id):
    access = check_access(request.user, session_id, VIEWER)
    job = Job.objects.filter(
        pk=job_id, session=access.session, kind=Job.Kind.COMPARE_SUMMARY
    ).first()
    if job is None:
        raise Http404("No such comparison job.")
    return render(
        request, "sessions_app/review/_compare_job.html", {"session": access.session, "job": job}
    )


# --- search -----------------------------------------------------------------------------


@login_required
@require_GET
def search(request):
    query = request.GET.get("q", "")
    context = {
        "query": query,
        "params": request.GET,
        "roles": search_service.ROLE_CHOICES,
        "result": None,
        "error": "",
    }
    status = 200
    try:
        filters = search_service.SearchFilters.from_params(request.GET)
        if query.strip() or filters.any():
            context["result"] = search_service.search(
                request.user, query, filters, page=_int(request.GET.get("page")) or 1
            )
    except search_service.SearchError as exc:
        context["error"] = str(exc)
        status = 400
    params = request.GET.copy()
    params.pop("page", None)
    context["base_query"] = params.urlencode()
    template = (
        "sessions_app/review/_search_results.html"
        if request.htmx and request.GET.get("partial") == "1"
        else "sessions_app/review/search.html"
    )
    return render(request, template, context, status=status)


# --- teams ------------------------------------------------------------------------------


@login_required
@require_GET
def teams(request):
    """The teams you are in, their members and what is shared with them (read-only:
    membership is managed in the admin)."""
    from sessions_app.models import Team

    my_teams = (
        Team.objects.filter(members=request.user).prefetch_related("members").order_by("name")
    )
    rows = []
    for team in my_teams:
        shared = (
            SessionShare.objects.filter(team=team)
            .select_related("session", "session__owner")
            .order_by("-session__modified_at")[:50]
        )
        rows.append({"team": team, "members": list(team.members.all()), "shares": shared})
    return render(request, "sessions_app/review/teams.html", {"rows": rows})


# Every route of this module, with the right it needs (the permissions matrix reads this).
ROUTE_RIGHTS = {
    "review_comments": VIEWER,
    "review_comment_add": VIEWER,
    "review_comment_resolve": VIEWER,
    "review_comment_reopen": VIEWER,
    "review_comment_counts": VIEWER,
    "review_list": VIEWER,
    "activity": VIEWER,
    "sharing": OWNER,
    "sharing_team": OWNER,
    "sharing_team_revoke": OWNER,
    "sharing_link": OWNER,
    "sharing_link_revoke": OWNER,
    "share_link": "link",
    "share_link_export": "link",
    "export": VIEWER,
    "compare": VIEWER,
    "compare_summary": EDITOR,  # a paid LLM job
    "compare_job": VIEWER,
    "search": "login",
    "teams": "login",
}

urlpatterns = [
    path("s/<str:session_id>/review/", review_list, name="review_list"),
    path("s/<str:session_id>/review/comments/", entry_comments, name="review_comments"),
    path("s/<str:session_id>/review/comments/add/", add_comment, name="review_comment_add"),
    path(
        "s/<str:session_id>/review/comments/<int:comment_id>/resolve/",
        resolve_comment,
        name="review_comment_resolve",
    ),
    path(
        "s/<str:session_id>/review/comments/<int:comment_id>/reopen/",
        reopen_comment,
        name="review_comment_reopen",
    ),
    path("s/<str:session_id>/review/counts.json", comment_counts, name="review_comment_counts"),
    path("s/<str:session_id>/activity/", activity, name="activity"),
    path("s/<str:session_id>/sharing/", sharing_page, name="sharing"),
    path("s/<str:session_id>/sharing/team/", share_team, name="sharing_team"),
    path(
        "s/<str:session_id>/sharing/team/<int:share_id>/revoke/",
        unshare_team,
        name="sharing_team_revoke",
    ),
    path("s/<str:session_id>/sharing/link/", create_link, name="sharing_link"),
    path(
        "s/<str:session_id>/sharing/link/<int:link_id>/revoke/",
        revoke_link,
        name="sharing_link_revoke",
    ),
    path("s/<str:session_id>/export/<str:fmt>/", export, name="export"),
    path("s/<str:session_id>/compare/", compare, name="compare"),
    path("s/<str:session_id>/compare/summary/", compare_summary, name="compare_summary"),
    path("s/<str:session_id>/compare/summary/<uuid:job_id>/", compare_job, name="compare_job"),
    path("l/<str:token>/", share_link, name="share_link"),
    path("l/<str:token>/export/<str:fmt>/", share_link_export, name="share_link_export"),
    path("search/", search, name="search"),
    path("teams/", teams, name="teams"),
]
