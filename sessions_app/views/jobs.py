"""The jobs panel: compactions and branch summaries, live; compact now; settings.

Thin views: check access, call services/jobs.py, render a partial from the panel's
context builders (selectors/panels/jobs.py). The list is re-rendered on websocket
`job_progress` events (static/piweb/jobs.js) and, as a fallback, polled every 2 s by htmx
while any job is active.
"""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from sessions_app.responses import notice
from sessions_app.selectors.panels.jobs import jobs_list_context, settings_context
from sessions_app.services import jobs
from sessions_app.services.access import EDITOR, VIEWER, check_access


def _back(access):
    return redirect("sessions_app:session_detail", session_id=access.session.pi_id)


@login_required
@require_GET
def jobs_panel(request, session_id):
    """The job list (the worker's sweeper deals with jobs whose worker died)."""
    access = check_access(request.user, session_id, VIEWER)
    return render(request, "sessions_app/jobs/_list.html", jobs_list_context(access))


@login_required
@require_POST
def compact_now(request, session_id):
    access = check_access(request.user, session_id, EDITOR)
    focus = request.POST.get("focus", "")
    try:
        jobs.request_compaction(access.session, actor=request.user, focus=focus)
    except jobs.JobError as exc:
        return notice(request, str(exc), level="error", status=400, target="#jobs-notice")
    if not request.htmx:
        return _back(access)
    context = {**jobs_list_context(access), "notice": "Compaction queued."}
    return render(request, "sessions_app/jobs/_list.html", context)


@login_required
@require_POST
def compaction_settings(request, session_id):
    access = check_access(request.user, session_id, EDITOR)
    error = ""
    try:
        jobs.update_compaction_settings(
            access.session,
            actor=request.user,
            enabled=request.POST.get("enabled") in ("on", "true", "1"),
            reserve_tokens=request.POST.get("reserve_tokens", ""),
            keep_recent_tokens=request.POST.get("keep_recent_tokens", ""),
        )
    except jobs.JobError as exc:
        error = str(exc)
    if not request.htmx and not error:
        return _back(access)
    access.session.refresh_from_db()
    context = {**settings_context(access), "error": error, "saved": not error}
    return render(
        request, "sessions_app/jobs/_settings.html", context, status=400 if error else 200
    )
