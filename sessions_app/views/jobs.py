"""The jobs panel: compactions and branch summaries, live; compact now; settings.

Thin views: check access, call services/jobs.py, render a partial. The list is
re-rendered on websocket `job_progress` events (static/piweb/jobs.js) and, as a
fallback, polled every 2 s by htmx while any job is active.
"""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from sessions_app.services import jobs
from sessions_app.services.access import EDITOR, VIEWER, check_access
from sessions_app.templatetags.jobs_tags import jobs_list_context


def _list(request, access, *, error="", notice="", status=200):
    context = {"session": access.session, "access": access, "error": error, "notice": notice}
    context.update(jobs_list_context(access.session))
    return render(request, "sessions_app/jobs/_list.html", context, status=status)


def _back(request, access):
    return redirect("sessions_app:session_detail", session_id=access.session.pi_id)


@login_required
@require_GET
def jobs_panel(request, session_id):
    """The job list (the worker's sweeper deals with jobs whose worker died)."""
    access = check_access(request.user, session_id, VIEWER)
    return _list(request, access)


@login_required
@require_POST
def compact_now(request, session_id):
    access = check_access(request.user, session_id, EDITOR)
    focus = request.POST.get("focus", "")
    try:
        jobs.request_compaction(access.session, actor=request.user, focus=focus)
    except jobs.JobError as exc:
        return _list(request, access, error=str(exc), status=400)
    if not request.htmx:
        return _back(request, access)
    return _list(request, access, notice="Compaction queued.")


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
        return _back(request, access)
    access.session.refresh_from_db()
    context = {
        "session": access.session,
        "access": access,
        "settings": jobs.compaction_settings(access.session),
        "error": error,
        "saved": not error,
    }
    return render(
        request, "sessions_app/jobs/_settings.html", context, status=400 if error else 200
    )


urlpatterns = [
    path("s/<str:session_id>/jobs/", jobs_panel, name="jobs_panel"),
    path("s/<str:session_id>/jobs/compact/", compact_now, name="jobs_compact"),
    path("s/<str:session_id>/jobs/settings/", compaction_settings, name="jobs_settings"),
]
