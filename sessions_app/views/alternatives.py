"""Alternatives (issue 36): the comparison page of the variants tried at a node, and its
actions (start variants, stop all, keep one). Thin: parse, check access, call
services/alternatives.py, render."""

from __future__ import annotations

from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django_htmx.http import HttpResponseClientRedirect

from sessions_app.core.errors import NotFound
from sessions_app.models import Job
from sessions_app.params import form, query
from sessions_app.responses import notice, session_view
from sessions_app.selectors.access import EDITOR
from sessions_app.selectors.alternatives import jobs_at, page_columns
from sessions_app.selectors.entries import find_entry
from sessions_app.selectors.navigation import archived_heads
from sessions_app.selectors.panels.chat import model_context
from sessions_app.services import alternatives, navigation, sessions

action = session_view(EDITOR, methods=("POST",), notice_errors=True)


def _page_url(session, at: str) -> str:
    return reverse("sessions_app:alternatives", args=[session.pi_id]) + "?" + urlencode({"at": at})


def _context(access, user, at: str) -> dict:
    session = access.session
    entry = find_entry(session, at) if at else None
    context = {
        "access": access,
        "session": session,
        "at": at if entry is not None else "",
        "entry": entry,
        "slots": range(1, alternatives.MAX_VARIANTS + 1),
        "levels": alternatives.THINKING_LEVELS,
        "tool_sets": alternatives.TOOL_SETS,
        "tool_names": [t.name for t in alternatives.ALL_TOOLS],
        "read_only_tools": alternatives.TOOL_SETS["read-only"],
    }
    if entry is not None:
        context.update(page_columns(session, at, archived_heads(session)))
        if access.can_edit:
            context["models"] = model_context(session, user)
    return context


@session_view()
def page(request, access):
    """`at`: the node whose variants are compared (and from which new ones start)."""
    at = query(request).stripped("at", limit=64)
    return render(
        request, "sessions_app/alternatives/page.html", _context(access, request.user, at)
    )


@session_view()
def columns(request, access):
    """The columns alone (polled while a variant runs)."""
    at = query(request).stripped("at", limit=64)
    context = _context(access, request.user, at)
    return render(request, "sessions_app/alternatives/_columns.html", context)


@action
def start(request, access):
    """Start the variants `message_N` / `model_N` / `thinking_N` / `tools_N` (N = 1..4,
    empty message: no variant) at `at`, with the optional `check` command."""
    params = form(request)
    at = params.stripped("at", limit=64)
    variants = []
    for n in range(1, alternatives.MAX_VARIANTS + 1):
        message = params.stripped(f"message_{n}")
        if message:
            variants.append(
                alternatives.Variant(
                    message,
                    params.stripped(f"model_{n}", limit=300),
                    params.stripped(f"thinking_{n}", limit=20),
                    alternatives.parse_tools(params.stripped(f"tools_{n}", limit=200)),
                )
            )
    if not variants:
        raise alternatives.AlternativeError("Give at least one variant a message.", 400)
    alternatives.start(access.session, request.user, at, variants, params.text("check", limit=2000))
    return HttpResponseClientRedirect(_page_url(access.session, at))


@action
def stop_all(request, access):
    at = form(request).stripped("at", limit=64)
    jobs = [j for j in jobs_at(access.session, at) if j.status in Job.ACTIVE]
    stopped = alternatives.stop_all(access.session, request.user, jobs)
    if not stopped:
        return notice(request, "Nothing is running.")
    return notice(request, f"Stopping {len(stopped)} variant(s)…", level="ok", code="stopping")


@action
def keep(request, access):
    """Keep the variant whose run is `run`: label its branch's last entry "kept", make it
    the leaf; work goes on there, in its workspace copy."""
    params = form(request)
    at, run_id = params.stripped("at", limit=64), params.stripped("run", limit=64)
    column = next((c for c in page_columns(access.session, at, set())["columns"]
                   if c["run_id"] == run_id), None)  # fmt: skip
    if column is None or not column["entry"]:
        raise NotFound("No such variant at this node.")
    navigation.set_label(access.session, column["entry"], "kept", actor=request.user)
    sessions.set_leaf(access.session, column["entry"], actor=request.user)  # its end itself
    return HttpResponseClientRedirect(
        reverse("sessions_app:session_detail", args=[access.session.pi_id])
    )
