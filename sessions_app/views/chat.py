"""Chat views: send a message or `!cmd`, queue one for the running agent (steer or
follow-up) or cancel it, stop the run, switch the model, and the transcript/queue/state
partials the chat panel refreshes. Thin: parse, check access, call
services/chat.py, answer with the notice partial or the panel's context builder."""

from functools import wraps

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from sessions_app.responses import notice
from sessions_app.selectors.jobs import queued_messages
from sessions_app.selectors.panels.chat import run_context, transcript_context
from sessions_app.services import chat
from sessions_app.services.access import EDITOR, check_access


def _chat_action(view):
    """A POST that needs editor rights: `view(request, session)`; a ChatError becomes the
    error notice, with its status and code."""

    @login_required
    @require_POST
    @wraps(view)
    def checked(request, session_id):
        access = check_access(request.user, session_id, need=EDITOR)
        try:
            return view(request, access.session)
        except chat.ChatError as exc:
            return notice(request, str(exc), level="error", status=exc.status, code=exc.code)

    return checked


@_chat_action
def send(request, session):
    """`text`, and any image files in `images` (multipart), each read up to one byte past
    the size limit so that the service can refuse it."""
    limit = settings.PIWEB_CHAT_IMAGE_MAX_BYTES + 1
    images = [upload.read(limit) for upload in request.FILES.getlist("images")]
    job = chat.send_message(session, request.user, request.POST.get("text", ""), images=images)
    if chat.is_held(job):
        message = "Sent, and queued behind your other runs: it starts when one of them ends."
        return notice(request, message, level="ok", run_id=str(job.pk), code="held")
    return notice(request, "Sent.", level="ok", run_id=str(job.pk))


@_chat_action
def stop(request, session):
    stopped = chat.stop_run(session, request.user)
    if stopped is None:
        return notice(request, "Nothing is running.")
    message = "Stopping…"
    if stopped.restored:
        message += " The queued messages are back in the box."
    context = {
        "message": message,
        "level": "ok",
        "run_id": str(stopped.job.pk),
        "restored": stopped.restored,
    }
    return render(request, "sessions_app/chat/_stopped.html", context)


@_chat_action
def queue(request, session):
    """Queue a message for the active run: `mode` "steer" or "follow_up"."""
    mode = request.POST.get("mode", "steer")
    item = chat.queue_message(session, request.user, request.POST.get("text", ""), mode)
    what = "steering message" if item.mode == "steer" else "follow-up"
    return notice(request, f"Queued as a {what}.", level="ok", code="queued")


@_chat_action
def unqueue(request, session):
    """Cancel one queued message (`item`) before the run takes it."""
    chat.cancel_queued(session, request.user, request.POST.get("item"))
    return notice(request, "Cancelled the queued message.", level="ok", code="unqueued")


@_chat_action
def switch_model(request, session):
    """Record a model_change at the leaf: `profile` is `provider/model-id` or the name of
    an environment profile."""
    entry = chat.switch_model(session, request.user, request.POST.get("profile", ""))
    return notice(
        request, f"Model: {entry.payload['provider']}/{entry.payload['modelId']}", level="ok"
    )


@_chat_action
def set_thinking(request, session):
    """Record a thinking_level_change at the leaf (clamped to the model's levels)."""
    entry = chat.set_thinking_level(session, request.user, request.POST.get("level", ""))
    return notice(request, f"Thinking: {entry.payload['thinkingLevel']}", level="ok")


@login_required
@require_GET
def transcript(request, session_id):
    access = check_access(request.user, session_id)
    context = {"session": access.session, "access": access, **transcript_context(access.session)}
    return render(request, "sessions_app/chat/_transcript.html", context)


@login_required
@require_GET
def queue_list(request, session_id):
    """The queued messages (refreshed on `queue_changed`)."""
    access = check_access(request.user, session_id)
    context = {"queue": queued_messages(access.session), "can_edit": access.can_edit}
    return render(request, "sessions_app/chat/_queue.html", context)


@login_required
@require_GET
def state(request, session_id):
    """The in-progress run (for a page that reconnects), as JSON."""
    access = check_access(request.user, session_id)
    return JsonResponse(run_context(access.session))
