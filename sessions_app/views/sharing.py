"""Sharing: teams and links of a session, the share-link page (no login) and its
exports, and the teams you are in.

Every view goes through the gate (`responses.session_view`; the share-link views,
without login, through `piweb_view` and access.check_access with the token); thin: parse
input, call a service, render.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from sessions_app.models import SessionShare, ShareLink, TeamMembership
from sessions_app.params import form, query
from sessions_app.presentation import exports
from sessions_app.rendering import page_budget
from sessions_app.responses import export_response, piweb_view, plain_text, session_view
from sessions_app.selectors.access import (
    OWNER,
    VIEWER,
    check_access,
    share_link_session_id,
)
from sessions_app.selectors.scores import badges_by_entry
from sessions_app.selectors.share_preview import share_preview
from sessions_app.selectors.sharing import (
    link_state,
    link_visible_entry_ids,
    session_link,
    session_links,
    session_shares,
    teams_for_sharing,
)
from sessions_app.selectors.teams import teams_with_shares
from sessions_app.services import sharing
from sessions_app.services.sessions import UNSET

# --- sharing ----------------------------------------------------------------------------


def _sharing_page(request, access, error: str = "", new_link: ShareLink | None = None, status=200):
    session = access.session
    params = query(request)
    leaf = params.text("leaf") or session.leaf_pi_id or ""
    target = params.text("target")
    links = session_links(session)
    for link in links:
        link.state = link_state(link)
        link.url = request.build_absolute_uri(reverse("sessions_app:share_link", args=[link.token]))
    return render(
        request,
        "sessions_app/sharing/sharing.html",
        {
            "access": access,
            "session": session,
            "shares": session_shares(session),
            "teams": teams_for_sharing(request.user),
            "roles": SessionShare.Role.choices,
            "links": links,
            "new_link": new_link,
            "error": error,
            "leaf": leaf,
            "scopes": ShareLink.Scope.choices,
            "target": target,
            "preview": share_preview(session, leaf, target),
        },
        status=status,
    )


@session_view(OWNER)
def sharing_page(request, access):
    return _sharing_page(request, access)


def _sharing_back(access):
    return redirect(reverse("sessions_app:sharing", args=[access.session.pi_id]))


@session_view(OWNER, methods=("POST",))
def share_team(request, access):
    params = form(request)
    try:
        sharing.share_with_team(
            access.session,
            params.integer("team", 0),
            params.text("role"),
            actor=request.user,
        )
    except sharing.SharingError as exc:  # shown on the sharing page, with its forms
        return _sharing_page(request, access, str(exc), status=400)
    return _sharing_back(access)


@session_view(OWNER, methods=("POST",))
def unshare_team(request, access, share_id):
    sharing.unshare_team(access.session, share_id, actor=request.user)
    return _sharing_back(access)


@session_view(OWNER, methods=("POST",))
def create_link(request, access):
    params = form(request)
    try:
        link = sharing.create_link(
            access.session,
            actor=request.user,
            leaf_pi_id=params.optional("leaf"),
            target_pi_id=params.optional("target"),
            expires_in_days=params.text("expires_in_days"),
            scope=params.text("scope") or ShareLink.Scope.PATH,
            show_scores=params.flag("show_scores"),
        )
    except sharing.SharingError as exc:  # shown on the sharing page, with its forms
        return _sharing_page(request, access, str(exc), status=400)
    link.url = request.build_absolute_uri(reverse("sessions_app:share_link", args=[link.token]))
    return _sharing_page(request, access, new_link=link)


@session_view(OWNER, methods=("POST",))
def revoke_link(request, access, link_id):
    sharing.revoke_link(access.session, link_id, actor=request.user)
    return _sharing_back(access)


# --- the share-link page (no login) -----------------------------------------------------


def _link_access(request, token: str):
    session_id = share_link_session_id(token)
    if session_id is None:
        raise Http404("No such link.")
    access = check_access(request.user, session_id, VIEWER, share_token=token)
    link = access.share_link or session_link(access.session, token)
    if link is None or link_state(link) != "active":
        # A member opening a dead link: the link is gone, whatever their own rights.
        raise Http404("This link was revoked or has expired.")
    return access, link


def _link_entry(request, name: str, visible: set[str]) -> str | None:
    """?leaf= / ?target= on a link page: only entries the link shows (else 404)."""
    value = query(request).optional(name)
    if value is not None and value not in visible:
        raise Http404("That entry is not on the shared branch.")
    return value


def _link_branch(request, link: ShareLink) -> tuple[set[str], str | None]:
    """The entries the link shows, and the leaf asked for (`?leaf=`, else the link's)."""
    visible = link_visible_entry_ids(link)
    return visible, _link_entry(request, "leaf", visible) or link.leaf_pi_id


def _children_page(request) -> tuple[str, int] | None:
    """`?children_of=ID&start=N`: which page of a wide node's children the tree lists."""
    params = query(request)
    node = params.text("children_of", limit=200)
    start = params.integer("start", 0, low=0)
    return (node, start) if node else None


@piweb_view(login=False)
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
        "sessions_app/sharing/share_page.html",
        {
            "access": access,
            "session": access.session,
            "link": link,
            "token": token,
            "view": view,
            "is_link_branch": view["leaf"] == link.leaf_pi_id,
            "score_badges": badges_by_entry(access.session, key="entry__pi_id")
            if link.show_scores
            else {},
        },
    )
    response["X-Robots-Tag"] = "noindex"
    response["Referrer-Policy"] = "no-referrer"
    return response


LINK_JSONL_REFUSED = (
    "A share link exports its branch as HTML or Markdown only: a pi JSONL file of one "
    "branch would be a fork, not the session. Ask the owner for access to the session."
)


@piweb_view(login=False)
def share_link_export(request, token, fmt):
    access, link = _link_access(request, token)
    if fmt == "jsonl":
        return plain_text(LINK_JSONL_REFUSED, 403)
    visible, leaf = _link_branch(request, link)
    return export_response(request, access, fmt, leaf, visible)


# --- teams ------------------------------------------------------------------------------


@piweb_view()
def teams(request):
    """The teams you are in, their members and what is shared with them (read-only:
    membership is managed in the admin)."""
    return render(
        request,
        "sessions_app/sharing/teams.html",
        {"rows": teams_with_shares(request.user), "roles": TeamMembership.Role.choices},
    )
