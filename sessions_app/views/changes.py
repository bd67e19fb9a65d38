"""What the agent changed: per node, per branch, two branches compared; restoring files.

Thin views over `selectors/changes.py` (reads) and `services/changes.py` (the restore);
every partial is rendered by htmx into the entry pane, the compare page or the chat.
"""

from django.http import Http404
from django.shortcuts import render

from sessions_app.diff_rendering import render_changes
from sessions_app.params import query
from sessions_app.responses import notice, session_view
from sessions_app.selectors import changes as selectors
from sessions_app.selectors.access import EDITOR
from sessions_app.selectors.entries import entry_exists, get_entry_or_404
from sessions_app.services import changes as service


def _context(access, change_set, **extra) -> dict:
    return {
        "access": access,
        "session": access.session,
        "changes": change_set,
        "files": render_changes(change_set.files),
        **extra,
    }


@session_view()
def entry_changes(request, access, entry_id):
    """The files one node changed, with their diffs."""
    entry = get_entry_or_404(access.session, entry_id)
    change_set = selectors.entry_changes(access.session, entry.pi_id)
    is_rewind = (entry.payload.get("customType") == service.REWIND_TYPE) and entry.type == "custom"
    return render(
        request,
        "sessions_app/changes/_entry.html",
        _context(access, change_set, entry=entry, is_rewind=is_rewind),
    )


@session_view()
def branch_changes(request, access, entry_id):
    """Everything changed from the branch point (or `?from=`) down to this node."""
    entry = get_entry_or_404(access.session, entry_id)
    start = query(request).optional("from")
    if start and not entry_exists(access.session, start):
        raise Http404("No such entry.")
    change_set = selectors.branch_changes(access.session, entry.pi_id, start)
    return render(
        request, "sessions_app/changes/_branch.html", _context(access, change_set, entry=entry)
    )


@session_view()
def compare_changes(request, access):
    """The file changes of two branches below their common ancestor, side by side."""
    params = query(request)
    a, b = params.text("a"), params.text("b")
    for pi_id in (a, b):
        if not pi_id or not entry_exists(access.session, pi_id):
            raise Http404("No such entry.")
    result = selectors.compare_changes(access.session, a, b)
    sides = [
        {
            "name": name,
            "id": pi_id,
            "changes": result[key],
            "files": render_changes(result[key].files),
        }
        for name, key, pi_id in (("A", "a", a), ("B", "b", b))
    ]
    return render(
        request,
        "sessions_app/changes/_compare.html",
        {
            "access": access,
            "session": access.session,
            "ancestor": result["ancestor"],
            "sides": sides,
        },
    )


def _restored(request, entry, text):
    return notice(
        request,
        text,
        level="ok",
        triggers={"piweb:tree-refresh": {"leaf": entry.pi_id, "entry": entry.pi_id}},
    )


# A restore answers with the notice partial (htmx or not), its errors too.
restore_action = session_view(EDITOR, methods=("POST",), notice_errors=True)


@restore_action
def restore(request, access, entry_id):
    """Restore files to this node (the state before is kept: the restore can be undone)."""
    get_entry_or_404(access.session, entry_id, "pk")
    entry = service.restore_files(access.session, request.user, entry_id)
    return _restored(request, entry, "The files are back as this node left them.")


@restore_action
def undo_restore(request, access, entry_id):
    """Put the files back to how they were just before a restore."""
    get_entry_or_404(access.session, entry_id, "pk")
    entry = service.undo_restore(access.session, request.user, entry_id)
    return _restored(request, entry, "The restore was undone.")
