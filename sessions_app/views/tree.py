"""The session tree in the browser: tree partials, entry pane, actions, context inspector.

Thin views: parse input, check access, call a service, render a partial. The tree is
laid out from one `values_list()` query of light columns (never payloads) by
`core/tree_layout.py`; folded runs and collapsed side branches are fetched lazily.
"""

from django.conf import settings
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from sessions_app.models import Job
from sessions_app.params import form, query
from sessions_app.rendering import encodable, full_output_path
from sessions_app.responses import download, notice, session_view
from sessions_app.selectors import workspaces
from sessions_app.selectors.access import EDITOR
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
from sessions_app.services.fork import fork_session


def _depth(request) -> int:
    return query(request).integer("depth", 0, low=0, high=500)


# --- tree partials (selectors/panels/tree.py builds their context) -------------------


@session_view()
def tree_panel(request, access):
    context = tree_context(access, tree_state(request.GET))
    return render(request, "sessions_app/tree/_tree.html", context)


def _lazy_rows(request, access, group: str, rows_of, **extra):
    """Rows of a folded run or a collapsed side branch (replacing its placeholder row)."""
    state = tree_state(request.GET)
    layout = build_layout(access.session, state)
    try:
        rows = rows_of(layout, _depth(request))
    except KeyError as exc:
        raise Http404("No such entry.") from exc
    context = rows_context(access, state, layout, rows, group=group, **extra)
    return render(request, "sessions_app/tree/_rows.html", context)


@session_view()
def tree_branch(request, access, head_id):
    """Rows of a collapsed side branch (replaces its "more" row)."""

    def rows_of(layout, depth):
        if head_id not in layout.index.by_id:
            raise KeyError(head_id)
        return layout.branch_rows(head_id, depth)

    return _lazy_rows(request, access, head_id, rows_of)


@session_view()
def tree_children(request, access, node_id):
    """The next page of a wide branch point's children (replaces its "children" row)."""
    start = query(request).integer("start", 0, low=0)

    def rows_of(layout, depth):
        if node_id not in layout.index.by_id:
            raise KeyError(node_id)
        return layout.children_rows(node_id, depth, start)

    return _lazy_rows(request, access, node_id, rows_of)


@session_view()
def tree_run(request, access, first_id, last_id):
    """Rows of a folded linear run (replaces its fold row)."""

    def rows_of(layout, depth):
        return layout.run_rows(first_id, last_id, depth)

    return _lazy_rows(request, access, first_id, rows_of, run=True)


# --- entry pane ---------------------------------------------------------------------


@session_view()
def entry_pane(request, access, entry_id):
    entry = get_entry_or_404(access.session, entry_id)
    view_leaf = query(request).text("leaf") or None  # None: the session's leaf
    return render(request, "sessions_app/tree/_entry.html", entry_context(access, entry, view_leaf))


@session_view()
def entry_text(request, access, entry_id):
    """ "Show more": the entry's text from `?from=` on, one bounded window at a time
    (settings.PIWEB_SHOW_MORE_CHARS characters), as escaped plain text."""
    entry = get_entry_or_404(access.session, entry_id)
    start = query(request).integer("from", 0, low=0)
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


@session_view()
def entry_raw(request, access, entry_id):
    """The entry exactly as stored (its JSONL line), as a streamed download."""
    line = get_entry_or_404(access.session, entry_id).line
    chunks = (
        line[i : i + RAW_CHUNK_CHARS].encode("utf-8", "surrogatepass")
        for i in range(0, len(line), RAW_CHUNK_CHARS)
    )
    response = StreamingHttpResponse(chunks, content_type="application/json; charset=utf-8")
    name = "".join(c for c in entry_id if c.isalnum() or c in "-_")[:40] or "entry"
    return download(response, f"entry-{name}.json")


@session_view()
def entry_output(request, access, entry_id):
    """The full output file an entry points at, as plain text, never outside our dirs."""
    entry = get_entry_or_404(access.session, entry_id)
    found = workspaces.open_artifact_file(access.session, full_output_path(entry.payload))
    if found is None:
        raise Http404("No full output file of this session for this entry.")
    file, name = found
    response = FileResponse(file, content_type="text/plain; charset=utf-8")
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return download(response, name, inline=True)


# --- actions (each answers with the notice partial; errors keep their real status) ---


# An action on one of the session's entries: editor rights, answered with the notice
# partial (its errors too, htmx or not).
entry_action = session_view(EDITOR, methods=("POST",), notice_errors=True)


def _editable(access, entry_id):
    """The session, once the entry is known to be in it (else 404)."""
    get_entry_or_404(access.session, entry_id, "pk")
    return access.session


def _summarize_and_navigate(request, session, entry_id):
    """Continue at `entry_id` with a summary of the branch being left (a job)."""
    params = form(request)
    focus = params.stripped("focus", limit=4000) or None
    # The leaf the page showed when the form was drawn: a second submission (double
    # click, another tab) names the same old leaf, so the jobs service dedupes it.
    current_leaf = session.leaf_pi_id
    old_leaf = params.text("old_leaf", current_leaf or "") or None
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
    job = jobs.request_branch_summary(
        session,
        old_leaf_pi_id=old_leaf,
        target_pi_id=entry_id,
        actor=request.user,
        custom_instructions=focus,
        replace_prompt=params.present("replace_prompt"),
    )
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


@entry_action
def action_navigate(request, access, entry_id):
    """Continue here (optionally with a summary of the branch being left)."""
    session = _editable(access, entry_id)
    params = form(request)
    if params.present("summary"):
        return _summarize_and_navigate(request, session, entry_id)
    result = navigation.navigate(session, entry_id, actor=request.user)
    restored, leaf = "", result.leaf
    if params.present("restore_files"):  # files too, as the node left them (undo-able)
        try:
            rewind = file_changes.restore_files(session, request.user, entry_id)
        except file_changes.RestoreError as exc:  # the leaf moved: say so, and why not files
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


@entry_action
def action_label(request, access, entry_id):
    session = _editable(access, entry_id)
    params = form(request)
    label = "" if params.present("remove") else params.text("label")
    navigation.set_label(session, entry_id, label, actor=request.user)
    return notice(
        request,
        "Label saved." if label.strip() else "Label removed.",
        level="ok",
        triggers={"piweb:tree-refresh": {"entry": entry_id}},
    )


@entry_action
def action_archive(request, access, entry_id):
    """Archive the branch below this node (`archive`=1) or show it again (`archive`=0)."""
    session = _editable(access, entry_id)
    archived = form(request).flag("archive")
    navigation.set_archived(session, entry_id, archived, actor=request.user)
    return notice(
        request,
        "Branch archived: it is folded away (and still in exports)."
        if archived
        else "Branch shown again.",
        level="ok",
        triggers={"piweb:tree-refresh": {"entry": entry_id}},
    )


@entry_action
def action_fork(request, access, entry_id):
    session = _editable(access, entry_id)
    scope = form(request).choice("scope", FORK_SCOPES, "path", "Unknown fork scope.")
    new = fork_session(session, entry_id, scope, request.user)
    return HttpResponseClientRedirect(reverse("sessions_app:session_detail", args=[new.pi_id]))


# --- context inspector ----------------------------------------------------------------


@session_view()
def inspector(request, access):
    leaf = query(request).optional("leaf")
    if leaf and not entry_exists(access.session, leaf):
        raise Http404("No such entry.")
    context = inspector_context(access, leaf or access.session.leaf_pi_id)
    html = render_to_string("sessions_app/tree/_inspector.html", context, request)
    return HttpResponse(encodable(html))
