"""Where a session continues ("Continue in…") and its link with pi's file (write-back).
Thin: check editor rights, call services/workspace_choice.py or services/jobs/write_back.py,
answer with the notice partial (the page reloads after a change)."""

from django.shortcuts import render
from django_htmx.http import HttpResponseClientRefresh

from sessions_app.core.errors import ServiceError
from sessions_app.params import form
from sessions_app.responses import notice, session_view
from sessions_app.selectors.access import EDITOR
from sessions_app.selectors.panels.pi_file import pi_file_context
from sessions_app.services import workspace_choice
from sessions_app.services.jobs import write_back as write_back_job

# Both actions answer with the notice partial (htmx or not), their errors too.
workspace_action = session_view(EDITOR, methods=("POST",), notice_errors=True)


@workspace_action
def continue_in(request, access):
    params = form(request)
    folder = workspace_choice.continue_in(
        access.session,
        request.user,
        params.text("kind"),
        path=params.text("path"),
        name=params.text("name"),
        upload=request.FILES.get("archive"),
        git_source=params.text("git_source"),
    )
    if request.htmx:
        return HttpResponseClientRefresh()
    return notice(request, f"Continuing in {folder}.", level="ok")


@session_view()
def pi_file(request, access):
    """The pi-file box (polled while pi is writing the session)."""
    context = {"session": access.session, "pf": pi_file_context(access)}
    return render(request, "sessions_app/workspace/_pi_file.html", context)


@workspace_action
def pi_file_write_back(request, access):
    action = form(request).choice("action", ("on", "off", "now"), "", "Unknown write-back action.")
    if action != "now" and not access.is_owner:
        # The file is on the owner's machine: whether piweb writes to it is theirs to say.
        raise ServiceError("Only the session's owner turns write-back on or off.", 403, "owner")
    # Either way the worker writes pi's file (the write-back job); the request only asks.
    if action == "now":
        result = write_back_job.write_back_now(access.session, actor=request.user)
    else:
        result = write_back_job.set_enabled(access.session, action == "on", actor=request.user)
    if action != "now" and request.htmx:
        return HttpResponseClientRefresh()
    if result.action == "not_followed":
        return notice(
            request, "This session is not followed from a pi file.", level="error", status=400
        )
    if result.action == "off":
        return notice(request, "Write-back is off for this session.")
    if result.action == "on":
        return notice(request, f"Write-back is on: what {result.path} lacks is being written.")
    return notice(request, f"Writing back to {result.path}: piweb's leaf goes last.", level="ok")
