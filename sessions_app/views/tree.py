"""The session tree in the browser: tree partials, entry pane, actions, context inspector.

Thin views: parse input, check access, call a service, render a partial. The tree is
laid out from one `values_list()` query of light columns (never payloads) by
`context/tree_layout.py`; folded runs and collapsed side branches are fetched lazily.
"""

import json
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, StreamingHttpResponse
from django.shortcuts import render
from django.urls import path, reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from sessions_app.context.preview import entry_text as plain_entry_text
from sessions_app.context.tree_layout import FILTER_MODES, Layout, TreeIndex
from sessions_app.models import Entry, Job, Session
from sessions_app.rendering import full_output_path, page_limit, render_entry, render_llm_message
from sessions_app.selectors.entries import line_lengths
from sessions_app.services import jobs, navigation, workspaces
from sessions_app.services.access import EDITOR, VIEWER, check_access
from sessions_app.services.fork import fork_session

TREE_COLUMNS = (
    "pk",
    "pi_id",
    "parent_id",
    "type",
    "role",
    "tool_name",
    "preview",
    "label",
    "token_count",
    "seq",
)
FORK_SCOPES = {
    "path": "Path to here",
    "path_and_siblings": "Path plus sibling branches",
    "up_to_depth": "Everything up to this depth",
}


# --- helpers ------------------------------------------------------------------------


def tree_index(session: Session) -> TreeIndex:
    return TreeIndex(Entry.objects.filter(session=session).values_list(*TREE_COLUMNS))


def tree_state(request, session: Session) -> dict:
    """The view parameters shared by the page and the tree partials."""
    params = request.GET
    mode = params.get("filter", "default")
    return {
        "leaf": params.get("leaf") or None,
        "target": params.get("target") or None,
        "filter": mode if mode in FILTER_MODES else "default",
        "q": params.get("q", "").strip()[:200],
        "open": [i for i in params.get("open", "").split(",") if i][:500],
    }


def build_layout(session: Session, state: dict, index: TreeIndex | None = None) -> Layout:
    index = index or tree_index(session)
    session_leaf = session.leaf.pi_id if session.leaf_id else None
    view_leaf = state["leaf"] if state["leaf"] in index.by_id else session_leaf
    target = state["target"] if state["target"] in index.by_id else None
    return Layout(
        index,
        view_leaf=view_leaf,
        session_leaf=session_leaf,
        target=target,
        mode=state["filter"],
        query=state["q"],
        expand=state["open"],
    )


def tree_context(request, access, state: dict) -> dict:
    session = access.session
    layout = build_layout(session, state)
    base = reverse("sessions_app:session_detail", args=[session.pi_id])
    view_leaf = layout.view_leaf.id if layout.view_leaf else None
    return {
        "access": access,
        "session": session,
        "rows": layout.rows(),
        "layout": layout,
        "state": state,
        "view_leaf": view_leaf,
        "session_leaf": layout.session_leaf.id if layout.session_leaf else None,
        "filter_modes": FILTER_MODES,
        "match_count": len(layout.matches),
        "page_url": base,
        "entry_count": len(layout.index),
    }


def node_link(session: Session, node_id: str, view_leaf: str | None, on_path: bool) -> str:
    base = reverse("sessions_app:session_detail", args=[session.pi_id])
    leaf = view_leaf if on_path and view_leaf else node_id
    return f"{base}?{urlencode({'leaf': leaf, 'target': node_id})}"


def _depth(request) -> int:
    try:
        return max(0, min(int(request.GET.get("depth", "0")), 500))
    except ValueError:
        return 0


def _get_entry(session: Session, entry_id: str) -> Entry:
    entry = Entry.objects.filter(session=session, pi_id=entry_id).first()
    if entry is None:
        raise Http404("No such entry.")
    return entry


def _message(request, text: str, level: str = "info", status: int = 200, triggers=None, extra=None):
    # htmx does not swap 4xx/5xx responses: an HTMX caller gets 200 with the message
    # (and the real status in X-Piweb-Status) so the person sees why nothing happened.
    shown = 200 if request.htmx and status >= 400 else status
    response = render(
        request,
        "sessions_app/tree/_action_result.html",
        {"text": text, "level": level, **(extra or {})},
        status=shown,
    )
    response["X-Piweb-Status"] = str(status)
    if triggers:
        response["HX-Trigger"] = json.dumps(triggers)
    return response


# --- tree partials ------------------------------------------------------------------


@login_required
@require_GET
def tree_panel(request, session_id):
    access = check_access(request.user, session_id, VIEWER)
    state = tree_state(request, access.session)
    return render(request, "sessions_app/tree/_tree.html", tree_context(request, access, state))


@login_required
@require_GET
def tree_branch(request, session_id, head_id):
    """Rows of a collapsed side branch (replaces its "more" row)."""
    access = check_access(request.user, session_id, VIEWER)
    state = tree_state(request, access.session)
    layout = build_layout(access.session, state)
    if head_id not in layout.index.by_id:
        raise Http404("No such entry.")
    rows = layout.branch_rows(head_id, _depth(request))
    return render(
        request,
        "sessions_app/tree/_rows.html",
        {
            "rows": rows,
            "session": access.session,
            "state": state,
            "view_leaf": layout.view_leaf.id if layout.view_leaf else None,
            "page_url": reverse("sessions_app:session_detail", args=[access.session.pi_id]),
            "group": head_id,
        },
    )


@login_required
@require_GET
def tree_run(request, session_id, first_id, last_id):
    """Rows of a folded linear run (replaces its fold row)."""
    access = check_access(request.user, session_id, VIEWER)
    state = tree_state(request, access.session)
    layout = build_layout(access.session, state)
    try:
        rows = layout.run_rows(first_id, last_id, _depth(request))
    except KeyError as exc:
        raise Http404("No such run.") from exc
    return render(
        request,
        "sessions_app/tree/_rows.html",
        {
            "rows": rows,
            "session": access.session,
            "state": state,
            "view_leaf": layout.view_leaf.id if layout.view_leaf else None,
            "page_url": reverse("sessions_app:session_detail", args=[access.session.pi_id]),
            "group": first_id,
            "run": True,
        },
    )


# --- entry pane ---------------------------------------------------------------------


def entry_context(access, entry: Entry, view_leaf: str | None) -> dict:
    session = access.session
    on_path = False
    if view_leaf:
        from sessions_app.services.tree import path_entry_pks

        leaf_pk = (
            Entry.objects.filter(session=session, pi_id=view_leaf)
            .values_list("pk", flat=True)
            .first()
        )
        on_path = bool(leaf_pk) and entry.pk in path_entry_pks(leaf_pk)
    children = list(
        Entry.objects.filter(session=session, parent=entry)
        .order_by("seq")
        .values_list("pi_id", "preview")[:20]
    )
    target = navigation.resolve_target(session, entry)
    return {
        "access": access,
        "session": session,
        "entry": entry,
        "parts": _entry_parts(session, entry.payload),
        "children": children,
        "link": node_link(session, entry.pi_id, view_leaf, on_path),
        "view_leaf": view_leaf,
        "is_session_leaf": session.leaf_id == entry.pk,
        "navigate_leaf": target.leaf,
        "prefills": target.editor_text is not None,
        "fork_scopes": FORK_SCOPES,
        "blocking_job": navigation.blocking_job(session) if access.can_edit else None,
        # Parts are cut to the page limit: a bigger entry offers the rest lazily.
        "entry_chars": len(entry.line),
        "is_large": len(entry.line) > page_limit(),
    }


@login_required
@require_GET
def entry_pane(request, session_id, entry_id):
    access = check_access(request.user, session_id, VIEWER)
    entry = _get_entry(access.session, entry_id)
    view_leaf = request.GET.get("leaf") or (
        access.session.leaf.pi_id if access.session.leaf_id else None
    )
    return render(request, "sessions_app/tree/_entry.html", entry_context(access, entry, view_leaf))


@login_required
@require_GET
def entry_text(request, session_id, entry_id):
    """ "Show more": the entry's text from `?from=` on, one bounded window at a time
    (settings.PIWEB_SHOW_MORE_CHARS characters), as escaped plain text."""
    access = check_access(request.user, session_id, VIEWER)
    entry = _get_entry(access.session, entry_id)
    try:
        start = max(0, int(request.GET.get("from", "0")))
    except ValueError:
        start = 0
    text = plain_entry_text(entry.payload)
    end = start + settings.PIWEB_SHOW_MORE_CHARS
    return render(
        request,
        "sessions_app/tree/_entry_text.html",
        {
            "session": access.session,
            "entry": entry,
            "chunk": text[start:end],
            "start": start,
            "next": end if end < len(text) else None,
            "left": max(0, len(text) - end),
            "total": len(text),
        },
    )


RAW_CHUNK_CHARS = 1 << 20


@login_required
@require_GET
def entry_raw(request, session_id, entry_id):
    """The entry exactly as stored (its JSONL line), as a streamed download."""
    access = check_access(request.user, session_id, VIEWER)
    line = _get_entry(access.session, entry_id).line
    chunks = (
        line[i : i + RAW_CHUNK_CHARS].encode("utf-8", "surrogatepass")
        for i in range(0, len(line), RAW_CHUNK_CHARS)
    )
    response = StreamingHttpResponse(chunks, content_type="application/json; charset=utf-8")
    name = "".join(c for c in entry_id if c.isalnum() or c in "-_")[:40] or "entry"
    response["Content-Disposition"] = f'attachment; filename="entry-{name}.json"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


def safe_output_path(session: Session, raw: str | None) -> Path | None:
    """The real path of a full-output file if it lies in THIS session's artifact directory.

    The path comes from the entry payload (attacker-controlled for imported sessions), so
    only files our own runs wrote for this very session are ever served.
    """
    return workspaces.session_artifact_file(session, raw)


def _entry_parts(session: Session, payload: dict) -> list:
    """render_entry, with the full-output link dropped when we cannot serve the file."""
    parts = render_entry(payload)
    if any(p.extra.get("full_output") for p in parts):
        if safe_output_path(session, full_output_path(payload)) is None:
            for p in parts:
                if p.extra.get("full_output"):
                    p.extra["full_output"] = None
    return parts


@login_required
@require_GET
def entry_output(request, session_id, entry_id):
    """The full output file an entry points at, as plain text, never outside our dirs."""
    access = check_access(request.user, session_id, VIEWER)
    entry = _get_entry(access.session, entry_id)
    path_ = safe_output_path(access.session, full_output_path(entry.payload))
    if path_ is None:
        raise Http404("No full output file of this session for this entry.")
    response = FileResponse(path_.open("rb"), content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="{path_.name}"'
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


# --- actions ------------------------------------------------------------------------


@login_required
@require_POST
def action_navigate(request, session_id, entry_id):
    """Continue here (optionally with a summary of the branch being left)."""
    access = check_access(request.user, session_id, EDITOR)
    session = access.session
    _get_entry(session, entry_id)
    if request.POST.get("summary"):
        focus = request.POST.get("focus", "").strip()[:4000] or None
        # The leaf the page showed when the form was drawn: a second submission (double
        # click, another tab) names the same old leaf, so the jobs service dedupes it.
        current_leaf = session.leaf.pi_id if session.leaf_id else None
        old_leaf = request.POST.get("old_leaf", current_leaf or "") or None
        if old_leaf != current_leaf:
            done = (
                Job.objects.filter(
                    session=session,
                    kind=Job.Kind.BRANCH_SUMMARY,
                    prepared_leaf_pi_id=old_leaf,
                    target_pi_id=entry_id,
                )
                .exclude(status__in=(Job.Status.FAILED, Job.Status.CANCELLED))
                .order_by("-created_at")
                .first()
            )
            if done is not None:  # a repeat of a request that already went through
                return _message(request, "Already requested.", "info", extra={"job": done})
            return _message(
                request,
                "The session moved on since this page was drawn; nothing was changed. "
                "Look at the tree again and choose where to continue.",
                "error",
                409,
                triggers={"piweb:tree-refresh": {"leaf": current_leaf, "entry": entry_id}},
            )
        try:
            job = jobs.request_branch_summary(
                session,
                old_leaf_pi_id=old_leaf,
                target_pi_id=entry_id,
                actor=request.user,
                custom_instructions=focus,
                replace_prompt=bool(request.POST.get("replace_prompt")),
            )
        except ValueError as exc:
            return _message(request, str(exc), "error", 409)
        session.refresh_from_db()
        new_leaf = session.leaf.pi_id if session.leaf_id else None
        triggers = {
            "piweb:tree-refresh": {"leaf": new_leaf, "entry": entry_id},
            "piweb:job-queued": {"job_id": str(job.pk), "kind": job.kind},
        }
        editor_text = (job.params or {}).get("editor_text")
        if editor_text is not None:
            triggers["piweb:prefill-input"] = {"text": editor_text}
        return _message(
            request,
            "Moved here. A summary of the branch you left is being written; it appears "
            "in the tree as soon as it is ready.",
            "info",
            triggers=triggers,
            extra={"job": job},
        )
    result = navigation.navigate(session, entry_id, actor=request.user)
    triggers = {"piweb:tree-refresh": {"leaf": result.leaf, "entry": entry_id}}
    if result.editor_text is not None:
        triggers["piweb:prefill-input"] = {"text": result.editor_text}
    text = "Leaf moved." if result.moved else "Already here."
    if result.editor_text is not None:
        text += " The message text is back in the input box: edit and send it."
    return _message(request, text, "ok", triggers=triggers)


@login_required
@require_POST
def action_label(request, session_id, entry_id):
    access = check_access(request.user, session_id, EDITOR)
    _get_entry(access.session, entry_id)
    label = request.POST.get("label", "")
    if request.POST.get("remove"):
        label = ""
    navigation.set_label(access.session, entry_id, label, actor=request.user)
    access.session.refresh_from_db()
    triggers = {"piweb:tree-refresh": {"entry": entry_id}}
    return _message(
        request, "Label saved." if label.strip() else "Label removed.", "ok", triggers=triggers
    )


@login_required
@require_POST
def action_fork(request, session_id, entry_id):
    access = check_access(request.user, session_id, EDITOR)
    _get_entry(access.session, entry_id)
    scope = request.POST.get("scope", "path")
    if scope not in FORK_SCOPES:
        return _message(request, "Unknown fork scope.", "error", 400)
    try:
        new = fork_session(access.session, entry_id, scope, request.user)
    except ValueError as exc:
        return _message(request, str(exc), "error", 400)
    url = reverse("sessions_app:session_detail", args=[new.pi_id])
    response = _message(request, f"Forked into a new session: {new}", "ok")
    response["HX-Redirect"] = url
    return response


# --- context inspector ----------------------------------------------------------------


@login_required
@require_GET
def inspector(request, session_id):
    from sessions_app.services.inspector import inspect_context

    access = check_access(request.user, session_id, VIEWER)
    leaf = request.GET.get("leaf") or None
    if leaf and not Entry.objects.filter(session=access.session, pi_id=leaf).exists():
        raise Http404("No such entry.")
    if leaf is None and access.session.leaf_id:
        leaf = access.session.leaf.pi_id
    report = inspect_context(access.session, leaf)
    # Parts are cut to the page limit: a message from a bigger entry offers the rest lazily.
    sizes = line_lengths(access.session, (m.entry_id for m in report.messages))
    for message in report.messages:
        message.parts = render_llm_message(message.message)
        message.large = sizes.get(message.entry_id, 0) > page_limit()
    return render(
        request,
        "sessions_app/tree/_inspector.html",
        {"access": access, "session": access.session, "report": report},
    )


urlpatterns = [
    path("s/<str:session_id>/tree/", tree_panel, name="tree_panel"),
    path("s/<str:session_id>/tree/branch/<str:head_id>/", tree_branch, name="tree_branch"),
    path("s/<str:session_id>/tree/run/<str:first_id>/<str:last_id>/", tree_run, name="tree_run"),
    path("s/<str:session_id>/e/<str:entry_id>/", entry_pane, name="entry_pane"),
    path("s/<str:session_id>/e/<str:entry_id>/output/", entry_output, name="entry_output"),
    path("s/<str:session_id>/e/<str:entry_id>/text/", entry_text, name="entry_text"),
    path("s/<str:session_id>/e/<str:entry_id>/raw/", entry_raw, name="entry_raw"),
    path("s/<str:session_id>/e/<str:entry_id>/navigate/", action_navigate, name="entry_navigate"),
    path("s/<str:session_id>/e/<str:entry_id>/label/", action_label, name="entry_label"),
    path("s/<str:session_id>/e/<str:entry_id>/fork/", action_fork, name="entry_fork"),
    path("s/<str:session_id>/inspect/", inspector, name="inspector"),
]
