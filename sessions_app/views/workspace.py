"""Where a session continues ("Continue in…") and its link with pi's file (write-back).
Thin: check editor rights, call services/workspace_choice.py or services/write_back.py,
answer with the notice partial (the page reloads after a change)."""

from django.contrib.auth.decorators import login_required
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRefresh

from sessions_app.responses import notice
from sessions_app.services import workspace_choice
from sessions_app.services.access import EDITOR, check_access


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
