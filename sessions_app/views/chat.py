"""Chat views: send a message or `!cmd`, stop the run, switch the model, and the
transcript/state partials the chat panel refreshes. Thin: parse, check access, call
services/chat.py, answer with the notice partial or the panel's context builder."""

from django.http import JsonResponse
from django.shortcuts import render

from sessions_app.params import form
from sessions_app.responses import notice, session_view
from sessions_app.selectors.panels.chat import run_context, transcript_context
from sessions_app.services import chat
from sessions_app.services.access import EDITOR

# A POST that needs editor rights, answered with the notice partial (the chat panel's
# fetch calls read it); a ChatError becomes the error notice, with its status and code.
chat_action = session_view(EDITOR, methods=("POST",), notice_errors=True)


@chat_action
def send(request, access):
    session = access.session
    job = chat.send_message(session, request.user, form(request).text("text"))
    if chat.is_held(job):
        message = "Sent, and queued behind your other runs: it starts when one of them ends."
        return notice(request, message, level="ok", run_id=str(job.pk), code="held")
    return notice(request, "Sent.", level="ok", run_id=str(job.pk))


@chat_action
def stop(request, access):
    job = chat.stop_run(access.session, request.user)
    if job is None:
        return notice(request, "Nothing is running.")
    return notice(request, "Stopping…", level="ok", run_id=str(job.pk))


@chat_action
def switch_model(request, access):
    """Record a model_change at the leaf: `profile` is `provider/model-id` or the name of
    an environment profile."""
    entry = chat.switch_model(access.session, request.user, form(request).text("profile"))
    return notice(
        request, f"Model: {entry.payload['provider']}/{entry.payload['modelId']}", level="ok"
    )


@chat_action
def set_thinking(request, access):
    """Record a thinking_level_change at the leaf (clamped to the model's levels)."""
    entry = chat.set_thinking_level(access.session, request.user, form(request).text("level"))
    return notice(request, f"Thinking: {entry.payload['thinkingLevel']}", level="ok")


@session_view()
def transcript(request, access):
    context = {"session": access.session, "access": access, **transcript_context(access.session)}
    return render(request, "sessions_app/chat/_transcript.html", context)


@session_view()
def state(request, access):
    """The in-progress run (for a page that reconnects), as JSON."""
    return JsonResponse(run_context(access.session))
