"""Where a session continues ("Continue in…") and its link with pi's file (write-back).
Thin: check editor rights, call services/workspace_choice.py or services/write_back.py,
answer with the notice partial (the page reloads after a change)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from sessions_app.responses import notice
from sessions_app.selectors.panels.pi_file import pi_file_context
from sessions_app.services import workspace_choice, write_back
from sessions_app.services.access import EDITOR, VIEWER, check_access


@login_required
@require_POST
def continue_in(request, session_id):
    access = check_access(request.user, session_id, need=EDITOR)
    kind = request.POST.get("kind", "")
    try:
        folder = workspace_choice.continue_in(
            access.session,
            request.user,
            kind,
            path=request.POST.get("path", ""),
            name=request.POST.get("name", ""),
            upload=request.FILES.get("archive"),
            git_source=request.POST.get("git_source", ""),
        )
    except workspace_choice.ChoiceError as exc:
        return notice(request, str(exc), level="error", status=400, code="workspace")
    if request.htmx:
        return HttpResponseClientRefresh()
    return notice(request, f"Continuing in {folder}.", level="ok")


@login_required
@require_GET
def pi_file(request, session_id):
    """The pi-file box (polled while pi is writing the session)."""
    access = check_access(request.user, session_id, VIEWER)
    context = {"session": access.session, "pf": pi_file_context(access)}
    return render(request, "sessions_app/workspace/_pi_file.html", context)


@login_required
@require_POST
def pi_file_write_back(request, session_id):
    access = check_access(request.user, session_id, need=EDITOR)
    action = request.POST.get("action", "")
    if action not in ("on", "off", "now"):
        return notice(request, "Unknown write-back action.", level="error", status=400)
    if action != "now" and not access.is_owner:
        # The file is on the owner's machine: whether piweb writes to it is theirs to say.
        return notice(
            request,
            "Only the session's owner turns write-back on or off.",
            level="error",
            status=403,
        )
    try:
        if action == "now":
            result = write_back.write_back(access.session, leaf_marker=True, actor=request.user)
        else:
            result = write_back.set_enabled(access.session, action == "on", actor=request.user)
    except write_back.PiWriting as exc:
        return notice(request, str(exc), level="error", status=409, code=exc.code)
    except write_back.WriteBackError as exc:
        return notice(request, str(exc), level="error", status=400, code=exc.code)
    if action != "now" and request.htmx:
        return HttpResponseClientRefresh()
    if result.action == "not_followed":
        return notice(
            request, "This session is not followed from a pi file.", level="error", status=400
        )
    if result.action == "off":
        return notice(request, "Write-back is off for this session.")
    return notice(
        request,
        f"{result.lines} line(s) written to {result.path}."
        if result.lines
        else "pi's file is up to date.",
        level="ok",
    )
