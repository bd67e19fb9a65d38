"""The session tree in the browser: tree partials, entry pane, actions, context inspector.

Thin views: parse input, check access, call a service, render a partial. The tree is
laid out from one `values_list()` query of light columns (never payloads) by
`core/tree_layout.py`; folded runs and collapsed side branches are fetched lazily.
"""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from sessions_app.models import Job
from sessions_app.rendering import encodable, full_output_path
from sessions_app.responses import download, notice
from sessions_app.selectors import workspaces
from sessions_app.selectors.entries import entry_exists, get_entry_or_404
from sessions_app.selectors.entries import plain_text as plain_entry_text
from sessions_app.selectors.jobs import latest_job
from sessions_app.selectors.panels.tree import (
    FORK_SCOPES,
    build_layout,
    entry_context,
    inspector_context,
    rows_context,
    tree_context,
    tree_state,
)
from sessions_app.services import changes as file_changes
from sessions_app.services import jobs, navigation
from sessions_app.services.access import EDITOR, VIEWER, check_access
from sessions_app.services.fork import fork_session


def _depth(request) -> int:
    try:
        return max(0, min(int(request.GET.get("depth", "0")), 500))
    except ValueError:
        return 0


# --- tree partials (selectors/panels/tree.py builds their context) -------------------


@login_required
@require_GET
def tree_panel(request, session_id):
    access = check_access(request.user, session_id, VIEWER)
    context = tree_context(access, tree_state(request.GET))
    return render(request, "sessions_app/tree/_tree.html", context)


def _lazy_rows(request, session_id, group: str, rows_of, **extra):
    """Rows of a folded run or a collapsed side branch (replacing its placeholder row)."""
    access = check_access(request.user, session_id, VIEWER)
    state = tree_state(request.GET)
    layout = build_layout(access.session, state)
    try:
        rows = rows_of(layout, _depth(request))
    except KeyError as exc:
        raise Http404("No such entry.") from exc
    context = rows_context(access, state, layout, rows, group=group, **extra)
    return render(request, "sessions_app/tree/_rows.html", context)


@login_required
@require_GET
def tree_branch(request, session_id, head_id):
    """Rows of a collapsed side branch (replaces its "more" row)."""

    def rows_of(layout, depth):
        if head_id not in layout.index.by_id:
            raise KeyError(head_id)
        return layout.branch_rows(head_id, depth)

    return _lazy_rows(request, session_id, head_id, rows_of)


@login_required
@require_GET
def tree_children(request, session_id, node_id):
    """The next page of a wide branch point's children (replaces its "children" row)."""
    try:
        start = max(0, int(request.GET.get("start", "0")))
    except ValueError:
        start = 0

    def rows_of(layout, depth):
        if node_id not in layout.index.by_id:
            raise KeyError(node_id)
        return layout.children_rows(node_id, depth, start)

    return _lazy_rows(request, session_id, node_id, rows_of)


@login_required
@require_GET
def tree_run(request, session_id, first_id, last_id):
    """Rows of a folded linear run (replaces its fold row)."""

    def rows_of(layout, depth):
        return layout.run_rows(first_id, last_id, depth)

    return _lazy_rows(request, session_id, first_id, rows_of, run=True)


# --- entry pane ---------------------------------------------------------------------


@login_required
@require_GET
def entry_pane(request, session_id, entry_id):
    access = check_access(request.user, session_id, VIEWER)
    entry = get_entry_or_404(access.session, entry_id)
    view_leaf = request.GET.get("leaf") or access.session.leaf_pi_id
    return render(request, "sessions_app/tree/_entry.html", entry_context(access, entry, view_leaf))


@login_required
@require_GET
def entry_text(request, session_id, entry_id):
    """ "Show more": the entry's text from `?from=` on, one bounded window at a time
    (settings.PIWEB_SHOW_MORE_CHARS characters), as escaped plain text."""
    access = check_access(request.user, session_id, VIEWER)
    entry = get_entry_or_404(access.session, entry_id)
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
    line = get_entry_or_404(access.session, entry_id).line
    chunks = (
        line[i : i + RAW_CHUNK_CHARS].encode("utf-8", "surrogatepass")
        for i in range(0, len(line), RAW_CHUNK_CHARS)
    )
    response = StreamingHttpResponse(chunks, content_type="application/json; charset=utf-8")
    name = "".join(c for c in entry_id if c.isalnum() or c in "-_")[:40] or "entry"
    return download(response, f"entry-{name}.json")


@login_required
@require_GET
def entry_output(request, session_id, entry_id):
    """The full output file an entry points at, as plain text, never outside our dirs."""
    access = check_access(request.user, session_id, VIEWER)
    entry = get_entry_or_404(access.session, entry_id)
    path_ = workspaces.session_artifact_file(access.session, full_output_path(entry.payload))
    if path_ is None:
        raise Http404("No full output file of this session for this entry.")
    response = FileResponse(path_.open("rb"), content_type="text/plain; charset=utf-8")
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return download(response, path_.name, inline=True)


# --- actions (each answers with the notice partial; errors keep their real status) ---


def _editable(request, session_id, entry_id):
    """The session, for an action on one of its entries (editor rights, else 403/404)."""
    access = check_access(request.user, session_id, EDITOR)
    get_entry_or_404(access.session, entry_id, "pk")
    return access.session


def _summarize_and_navigate(request, session, entry_id):
    """Continue at `entry_id` with a summary of the branch being left (a job)."""
    focus = request.POST.get("focus", "").strip()[:4000] or None
    # The leaf the page showed when the form was drawn: a second submission (double
    # click, another tab) names the same old leaf, so the jobs service dedupes it.
    current_leaf = session.leaf_pi_id
    old_leaf = request.POST.get("old_leaf", current_leaf or "") or None
    if old_leaf != current_leaf:
        done = latest_job(session, Job.Kind.BRANCH_SUMMARY, old_leaf, entry_id, live=True)
        if done is not None:  # a repeat of a request that already went through
            return notice(request, "Already requested.", job=done)
        return notice(
            request,
            "The session moved on since this page was drawn; nothing was changed. "
            "Look at the tree again and choose where to continue.",
            level="error",
            status=409,
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
        return notice(request, str(exc), level="error", status=409)
    session.refresh_from_db()
    triggers = {
        "piweb:tree-refresh": {"leaf": session.leaf_pi_id, "entry": entry_id},
        "piweb:job-queued": {"job_id": str(job.pk), "kind": job.kind},
    }
    editor_text = (job.params or {}).get("editor_text")
    if editor_text is not None:
        triggers["piweb:prefill-input"] = {"text": editor_text}
    return notice(
        request,
        "Moved here. A summary of the branch you left is being written; it appears "
        "in the tree as soon as it is ready.",
        triggers=triggers,
        job=job,
    )


@login_required
@require_POST
def action_navigate(request, session_id, entry_id):
    """Continue here (optionally with a summary of the branch being left)."""
    session = _editable(request, session_id, entry_id)
    if request.POST.get("summary"):
        return _summarize_and_navigate(request, session, entry_id)
    result = navigation.navigate(session, entry_id, actor=request.user)
    restored, leaf = "", result.leaf
    if request.POST.get("restore_files"):  # files too, as the node left them (undo-able)
        try:
            rewind = file_changes.restore_files(session, request.user, entry_id)
        except file_changes.RestoreError as exc:
            restored = f" The files were not restored: {exc}"
        else:  # recorded as an entry at the new leaf
            leaf = rewind.pi_id
            restored = " The files are back as this node left them."
    triggers = {"piweb:tree-refresh": {"leaf": leaf, "entry": entry_id}}
    if result.editor_text is not None:
        triggers["piweb:prefill-input"] = {"text": result.editor_text}
    text = "Leaf moved." if result.moved else "Already here."
    if result.editor_text is not None:
        text += " The message text is back in the input box: edit and send it."
    text += restored
    return notice(request, text, level="ok", triggers=triggers)


@login_required
@require_POST
def action_label(request, session_id, entry_id):
    session = _editable(request, session_id, entry_id)
    label = "" if request.POST.get("remove") else request.POST.get("label", "")
    navigation.set_label(session, entry_id, label, actor=request.user)
    return notice(
        request,
        "Label saved." if label.strip() else "Label removed.",
        level="ok",
        triggers={"piweb:tree-refresh": {"entry": entry_id}},
    )


@login_required
@require_POST
def action_fork(request, session_id, entry_id):
    session = _editable(request, session_id, entry_id)
    scope = request.POST.get("scope", "path")
    if scope not in FORK_SCOPES:
        return notice(request, "Unknown fork scope.", level="error", status=400)
    try:
        new = fork_session(session, entry_id, scope, request.user)
    except ValueError as exc:
        return notice(request, str(exc), level="error", status=400)
    return HttpResponseClientRedirect(reverse("sessions_app:session_detail", args=[new.pi_id]))


# --- context inspector ----------------------------------------------------------------


@login_required
@require_GET
def inspector(request, session_id):
    access = check_access(request.user, session_id, VIEWER)
    leaf = request.GET.get("leaf") or None
    if leaf and not entry_exists(access.session, leaf):
        raise Http404("No such entry.")
    context = inspector_context(access, leaf or access.session.leaf_pi_id)
    html = render_to_string("sessions_app/tree/_inspector.html", context, request)
    return HttpResponse(encodable(html))
