"""What the agent changed: per node, per branch, two branches compared; restoring files.

Thin views over `selectors/changes.py` (reads) and `services/changes.py` (the restore);
every partial is rendered by htmx into the entry pane, the compare page or the chat.
"""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from sessions_app.diff_rendering import render_changes
from sessions_app.responses import notice
from sessions_app.selectors import changes as selectors
from sessions_app.selectors.entries import entry_exists, get_entry_or_404
from sessions_app.services import changes as service
from sessions_app.services.access import EDITOR, VIEWER, check_access


def _context(access, change_set, **extra) -> dict:
    return {
        "access": access,
        "session": access.session,
        "changes": change_set,
        "files": render_changes(change_set.files),
        **extra,
    }


@login_required
@require_GET
def entry_changes(request, session_id, entry_id):
    """The files one node changed, with their diffs."""
    access = check_access(request.user, session_id, VIEWER)
    entry = get_entry_or_404(access.session, entry_id)
    change_set = selectors.entry_changes(access.session, entry.pi_id)
    is_rewind = (entry.payload.get("customType") == service.REWIND_TYPE) and entry.type == "custom"
    return render(
        request,
        "sessions_app/changes/_entry.html",
        _context(access, change_set, entry=entry, is_rewind=is_rewind),
    )


@login_required
@require_GET
def branch_changes(request, session_id, entry_id):
    """Everything changed from the branch point (or `?from=`) down to this node."""
    access = check_access(request.user, session_id, VIEWER)
    entry = get_entry_or_404(access.session, entry_id)
    start = request.GET.get("from") or None
    if start and not entry_exists(access.session, start):
        raise Http404("No such entry.")
    change_set = selectors.branch_changes(access.session, entry.pi_id, start)
    return render(
        request, "sessions_app/changes/_branch.html", _context(access, change_set, entry=entry)
    )


@login_required
@require_GET
def compare_changes(request, session_id):
    """The file changes of two branches below their common ancestor, side by side."""
    access = check_access(request.user, session_id, VIEWER)
    a, b = request.GET.get("a", ""), request.GET.get("b", "")
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


@login_required
@require_POST
def restore(request, session_id, entry_id):
    """Restore files to this node (the state before is kept: the restore can be undone)."""
    access = check_access(request.user, session_id, EDITOR)
    get_entry_or_404(access.session, entry_id, "pk")
    try:
        entry = service.restore_files(access.session, request.user, entry_id)
    except service.RestoreError as exc:
        return notice(request, str(exc), level="error", status=exc.status)
    return _restored(request, entry, "The files are back as this node left them.")


@login_required
@require_POST
def undo_restore(request, session_id, entry_id):
    """Put the files back to how they were just before a restore."""
    access = check_access(request.user, session_id, EDITOR)
    get_entry_or_404(access.session, entry_id, "pk")
    try:
        entry = service.undo_restore(access.session, request.user, entry_id)
    except service.RestoreError as exc:
        return notice(request, str(exc), level="error", status=exc.status)
    return _restored(request, entry, "The restore was undone.")
