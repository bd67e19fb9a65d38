"""Chat views: send a message or `!cmd`, queue one for the running agent (steer or
follow-up) or cancel it, stop the run, switch the model, and the transcript/queue/state
partials the chat panel refreshes. Thin: parse, check access, call
services/chat.py, answer with the notice partial or the panel's context builder."""

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render

from sessions_app.params import form, query
from sessions_app.responses import notice, session_view
from sessions_app.selectors.access import EDITOR
from sessions_app.selectors.jobs import queued_messages
from sessions_app.selectors.panels import chat as chat_panel
from sessions_app.selectors.panels.chat import run_context, transcript_context
from sessions_app.selectors.runs import active_run, run_of
from sessions_app.services import chat, jobs

# A POST that needs editor rights, answered with the notice partial (the chat panel's
# htmx forms and buttons put it in #chat-notice); a ChatError becomes the error notice,
# with its status and code.
chat_action = session_view(EDITOR, methods=("POST",), notice_errors=True)


@chat_action
def send(request, access):
    """`text`, and any image files in `images` (multipart), each read up to one byte past
    the size limit so that the service can refuse it."""
    uploads = request.FILES.getlist("images")
    chat.check_image_count(len(uploads))  # before any file is read
    limit = settings.PIWEB_CHAT_IMAGE_MAX_BYTES + 1
    images = [upload.read(limit) for upload in uploads]
    job = chat.send_message(access.session, request.user, form(request).text("text"), images=images)
    if chat.is_held(job):
        message = "Sent, and queued behind your other runs: it starts when one of them ends."
        return notice(request, message, level="ok", run_id=str(job.pk), code="held")
    return notice(request, "Sent.", level="ok", run_id=str(job.pk))


@chat_action
def stop(request, access):
    """Stop the run `run` (a branch's), else the run on the leaf."""
    stopped = chat.stop_run(access.session, request.user, form(request).optional("run", limit=64))
    if stopped is None:
        return notice(request, "Nothing is running.")
    message = "Stopping…"
    if stopped.restored:
        message += " The queued messages are back in the box."
    context = {
        "message": message,
        "level": "ok",
        "run_id": str(stopped.job.pk),
        "code": "stopping",
        "restored": stopped.restored,
    }
    return render(request, "sessions_app/chat/_stopped.html", context)


@chat_action
def queue(request, access):
    """Queue a message for a branch's run (`run`, else the run on the leaf): `mode`
    "steer" or "follow_up"."""
    params = form(request)
    item = chat.queue_message(
        access.session,
        request.user,
        params.text("text"),
        params.text("mode", "steer"),
        run_id=params.optional("run", limit=64),
    )
    what = "steering message" if item.mode == "steer" else "follow-up"
    return notice(request, f"Queued as a {what}.", level="ok", code="queued")


@chat_action
def unqueue(request, access):
    """Cancel one queued message (`item`) before the run takes it."""
    chat.cancel_queued(access.session, request.user, form(request).integer("item"))
    return notice(request, "Cancelled the queued message.", level="ok", code="unqueued")


@chat_action
def switch_model(request, access):
    """Record a model_change at the leaf: `profile` is `provider/model-id` or the name of
    an environment profile."""
    profile = form(request).text("profile")
    entry = chat.switch_model(access.session, request.user, profile)
    return notice(
        request,
        f"Model: {entry.payload['provider']}/{entry.payload['modelId']}",
        level="ok",
        triggers={"piweb:model-switched": {"profile": profile}},  # the header's picker
    )


@chat_action
def set_thinking(request, access):
    """Record a thinking_level_change at the leaf (clamped to the model's levels)."""
    entry = chat.set_thinking_level(access.session, request.user, form(request).text("level"))
    level = entry.payload["thinkingLevel"]
    return notice(
        request,
        f"Thinking: {level}",
        level="ok",
        triggers={"piweb:thinking-set": {"level": level}},  # the header's control
    )


@chat_action
def compact(request, access):
    """The chat box's /compact [focus]: queue a compaction, answered in the chat's notice
    (the jobs panel's own button answers with its list)."""
    focus = form(request).text("focus").strip()
    job = jobs.request_compaction(access.session, actor=request.user, focus=focus)
    message = f"Compaction queued, focused on: {focus}" if focus else "Compaction queued."
    return notice(
        request,
        message,
        level="ok",
        code="compaction_queued",
        triggers={"piweb:job-queued": {"job_id": str(job.pk), "kind": job.kind}},
    )


@session_view()
def transcript(request, access):
    """The chat's transcript: its last entries, or (`before`) the chunk before an entry."""
    before = query(request).optional("before", limit=64)
    context = {
        "session": access.session,
        "access": access,
        **transcript_context(access.session, before=before),
    }
    return render(request, "sessions_app/chat/_transcript.html", context)


@session_view()
def queue_list(request, access):
    """The queued messages of a branch's run (`run`, else the run on the leaf; refreshed
    on `queue_changed`)."""
    run_id = query(request).optional("run", limit=64)
    job = run_of(access.session, run_id) if run_id else active_run(access.session)
    context = {
        "session": access.session,
        "queue": queued_messages(access.session, job),
        "can_edit": access.can_edit,
    }
    return render(request, "sessions_app/chat/_queue.html", context)


@session_view()
def model_notice(request, access):
    """Whether the model at the leaf can run (refreshed when that may have changed)."""
    models = chat_panel.model_context(access.session, request.user)
    notice = chat_panel.model_notice(models, access.can_edit)
    context = {"session": access.session, "notice": notice}
    return render(request, "sessions_app/chat/_model_notice.html", context)


@session_view()
def state(request, access):
    """The in-progress run (for a page that reconnects), as JSON."""
    return JsonResponse(run_context(access.session))
