"""The jobs panel: compactions and branch summaries, live; compact now; settings.

Thin views: check access, call services/jobs.py, render a partial from the panel's
context builders (selectors/panels/jobs.py). The list is re-rendered on websocket
`job_progress` events (static/piweb/jobs.js) and, as a fallback, polled every 2 s by htmx
while any job is active.
"""

from django.shortcuts import redirect, render

from sessions_app.params import form
from sessions_app.responses import session_view
from sessions_app.selectors.access import EDITOR
from sessions_app.selectors.panels.jobs import jobs_list_context, settings_context
from sessions_app.services import jobs


def _back(access):
    return redirect("sessions_app:session_detail", session_id=access.session.pi_id)


@session_view()
def jobs_panel(request, access):
    """The job list (the worker's sweeper deals with jobs whose worker died)."""
    return render(request, "sessions_app/jobs/_list.html", jobs_list_context(access))


# A refused compaction is a notice (htmx or not) in the panel's notice box.
@session_view(EDITOR, methods=("POST",), notice_errors=True, error_target="#jobs-notice")
def compact_now(request, access):
    jobs.request_compaction(access.session, actor=request.user, focus=form(request).text("focus"))
    if not request.htmx:
        return _back(access)
    context = {**jobs_list_context(access), "notice": "Compaction queued."}
    return render(request, "sessions_app/jobs/_list.html", context)


@session_view(EDITOR, methods=("POST",))
def compaction_settings(request, access):
    params = form(request)
    error = ""
    try:
        jobs.update_compaction_settings(
            access.session,
            actor=request.user,
            enabled=params.flag("enabled"),
            reserve_tokens=params.text("reserve_tokens"),
            keep_recent_tokens=params.text("keep_recent_tokens"),
        )
    except jobs.JobError as exc:  # shown in the settings form
        error = str(exc)
    if not request.htmx and not error:
        return _back(access)
    access.session.refresh_from_db()
    context = {**settings_context(access), "error": error, "saved": not error}
    return render(
        request, "sessions_app/jobs/_settings.html", context, status=400 if error else 200
    )
