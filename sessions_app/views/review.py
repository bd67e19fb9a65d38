"""Review area: comments, the review list, sharing (teams and links), the share-link page,
search, exports, branch compare and the activity list.

Every view goes through access.check_access (share-link views pass the token); thin:
parse input, call a service, render.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from sessions_app.models import Job, SessionShare, ShareLink
from sessions_app.rendering import page_budget
from sessions_app.responses import bad_request, download, plain_text
from sessions_app.selectors.entries import find_entry
from sessions_app.selectors.jobs import latest_job, session_job
from sessions_app.selectors.review import (
    session_activity,
    session_link,
    session_links,
    session_shares,
)
from sessions_app.selectors.teams import teams_with_shares
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
    entry = find_entry(access.session, entry_pi_id, "pk", "pi_id", "preview", "type", "role")
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
    response = render(request, "sessions_app/review/_comments.html", context)
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
    items = session_activity(access.session)
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
    links = session_links(session)
    for link in links:
        link.state = sharing.link_state(link)
        link.url = request.build_absolute_uri(reverse("sessions_app:share_link", args=[link.token]))
    return render(
        request,
        "sessions_app/review/sharing.html",
        {
            "access": access,
            "session": session,
            "shares": session_shares(session),
            "teams": sharing.teams_for_sharing(request.user),
            "roles": SessionShare.Role.choices,
            "links": links,
            "new_link": new_link,
            "error": error,
            "leaf": request.GET.get("leaf") or session.leaf_pi_id or "",
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


def _withdraw(request, session_id, withdraw, pk: int):
    """Remove a team share or revoke a link (owner only), then back to the sharing page."""
    access = check_access(request.user, session_id, OWNER)
    try:
        withdraw(access.session, pk, actor=request.user)
    except sharing.SharingError as exc:
        raise Http404(str(exc)) from exc
    return redirect(reverse("sessions_app:sharing", args=[session_id]))


@login_required
@require_POST
def unshare_team(request, session_id, share_id):
    return _withdraw(request, session_id, sharing.unshare_team, share_id)


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
    return _withdraw(request, session_id, sharing.revoke_link, link_id)


# --- the share-link page (no login) -----------------------------------------------------


def _link_access(request, token: str):
    session_id = share_link_session_id(token)
    if session_id is None:
        raise Http404("No such link.")
    access = check_access(request.user, session_id, VIEWER, share_token=token)
    link = access.share_link or session_link(access.session, token)
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


def _link_branch(request, link: ShareLink) -> tuple[set[str], str | None]:
    """The entries the link shows, and the leaf asked for (`?leaf=`, else the link's)."""
    visible = sharing.link_visible_entry_ids(link)
    return visible, _link_entry(request, "leaf", visible) or link.leaf_pi_id


def _children_page(request) -> tuple[str, int] | None:
    """`?children_of=ID&start=N`: which page of a wide node's children the tree lists."""
    node = request.GET.get("children_of", "")[:200]
    try:
        start = max(0, int(request.GET.get("start", "0")))
    except ValueError:
        start = 0
    return (node, start) if node else None


@require_GET
def share_link(request, token):
    access, link = _link_access(request, token)
    visible, leaf = _link_branch(request, link)
    target = _link_entry(request, "target", visible) or (
        link.target_pi_id if leaf == link.leaf_pi_id else leaf
    )
    view = exports.branch_view(
        access.session,
        leaf if leaf else UNSET,
        target,
        visible,
        budget=page_budget(),
        children_page=_children_page(request),
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
    visible, leaf = _link_branch(request, link)
    return _export_response(request, access, fmt, leaf, visible)


# --- exports ----------------------------------------------------------------------------


def _export_response(request, access, fmt: str, leaf: str | None, visible: set | None = None):
    try:
        export = exports.export_session(
            access.session, fmt, leaf, actor=request.user, visible=visible
        )
    except exports.ExportError as exc:
        return bad_request(request, str(exc))
    if export.streams:  # (the pi JSONL: never the whole file in memory)
        response = StreamingHttpResponse(export.content, content_type=export.content_type)
    else:
        response = HttpResponse(export.content, content_type=export.content_type)
    inline = request.GET.get("inline") == "1" and fmt != "html"
    return download(response, export.filename, inline=inline)


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
            context["job"] = latest_job(access.session, Job.Kind.COMPARE_SUMMARY, a, b)
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
        return bad_request(request, str(exc))
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
    job = session_job(access.session, job_id, Job.Kind.COMPARE_SUMMARY)
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
    return render(
        request, "sessions_app/review/teams.html", {"rows": teams_with_shares(request.user)}
    )
