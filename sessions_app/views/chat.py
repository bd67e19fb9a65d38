"""Chat views: send a message or `!cmd`, stop the run, switch the model, and the
transcript/state partials the chat panel refreshes. Thin: parse, check access, call
services/chat.py, answer with the notice partial or the panel's context builder."""

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from sessions_app.responses import notice
from sessions_app.selectors.panels.chat import run_context, transcript_context
from sessions_app.services import chat, llm
from sessions_app.services.access import EDITOR, check_access


def _chat_action(request, session_id, act):
    """Check editor rights, run `act(session)`; a ChatError becomes the error notice."""
    access = check_access(request.user, session_id, need=EDITOR)
    try:
        return access.session, act(access.session), None
    except chat.ChatError as exc:
        error = notice(request, str(exc), level="error", status=exc.status, code=exc.code)
        return access.session, None, error


@login_required
@require_POST
def send(request, session_id):
    text = request.POST.get("text", "")
    _, job, error = _chat_action(
        request, session_id, lambda s: chat.send_message(s, request.user, text)
    )
    return error or notice(request, "Sent.", level="ok", run_id=str(job.pk))


@login_required
@require_POST
def stop(request, session_id):
    _, job, error = _chat_action(request, session_id, lambda s: chat.stop_run(s, request.user))
    if error or job is None:
        return error or notice(request, "Nothing is running.")
    return notice(request, "Stopping…", level="ok", run_id=str(job.pk))


@login_required
@require_POST
def switch_model(request, session_id):
    name = request.POST.get("profile", "")
    session, _, error = _chat_action(
        request, session_id, lambda s: chat.switch_model(s, request.user, name)
    )
    if error:
        return error
    profile = llm.resolve_profile(session.model_profile)
    return notice(
        request, f"Model: {profile.label if profile else session.model_profile}", level="ok"
    )


@login_required
@require_GET
def transcript(request, session_id):
    access = check_access(request.user, session_id)
    context = {"session": access.session, "access": access, **transcript_context(access.session)}
    return render(request, "sessions_app/chat/_transcript.html", context)


@login_required
@require_GET
def state(request, session_id):
    """The in-progress run (for a page that reconnects), as JSON."""
    access = check_access(request.user, session_id)
    return JsonResponse(run_context(access.session))


urlpatterns = [
    path("s/<str:session_id>/chat/send/", send, name="chat_send"),
    path("s/<str:session_id>/chat/stop/", stop, name="chat_stop"),
    path("s/<str:session_id>/chat/model/", switch_model, name="chat_model"),
    path("s/<str:session_id>/chat/transcript/", transcript, name="chat_transcript"),
    path("s/<str:session_id>/chat/state/", state, name="chat_state"),
]
