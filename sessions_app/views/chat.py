"""Chat views: send a message or `!cmd`, stop the run, switch the model, and the
transcript/state partials the chat panel refreshes. Thin: parse, check access, call
services/chat.py, render a partial."""

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from sessions_app.context.input_limits import bounded, display_value
from sessions_app.rendering import page_budget, render_entries_within
from sessions_app.services import chat, llm, tree
from sessions_app.services.access import EDITOR, check_access

TRANSCRIPT_LIMIT = 200


def _notice(request, message: str, *, kind: str = "info", status: int = 200, **extra):
    context = {"message": message, "kind": kind, **extra}
    return render(request, "sessions_app/chat/_notice.html", context, status=status)


@login_required
@require_POST
def send(request, session_id):
    access = check_access(request.user, session_id, need=EDITOR)
    try:
        job = chat.send_message(access.session, request.user, request.POST.get("text", ""))
    except chat.ChatError as exc:
        return _notice(request, str(exc), kind="error", status=exc.status, code=exc.code)
    return _notice(request, "Sent.", kind="ok", run_id=str(job.pk))


@login_required
@require_POST
def stop(request, session_id):
    access = check_access(request.user, session_id, need=EDITOR)
    try:
        job = chat.stop_run(access.session, request.user)
    except chat.ChatError as exc:
        return _notice(request, str(exc), kind="error", status=exc.status, code=exc.code)
    if job is None:
        return _notice(request, "Nothing is running.", kind="info")
    return _notice(request, "Stopping…", kind="ok", run_id=str(job.pk))


@login_required
@require_POST
def switch_model(request, session_id):
    access = check_access(request.user, session_id, need=EDITOR)
    try:
        chat.switch_model(access.session, request.user, request.POST.get("profile", ""))
    except chat.ChatError as exc:
        return _notice(request, str(exc), kind="error", status=exc.status)
    profile = llm.resolve_profile(access.session.model_profile)
    return _notice(
        request, f"Model: {profile.label if profile else access.session.model_profile}", kind="ok"
    )


def transcript_context(session, limit: int = TRANSCRIPT_LIMIT) -> dict:
    hidden, tail = tree.load_path_tail(session, limit)
    # Imported text may hold lone surrogates: display_value makes it safe to show.
    tail = [
        display_value(p) for p in tail if p.get("type") not in ("label", "session_info", "custom")
    ]
    # Newest first within the page's budget: older entries join the "not shown" count.
    rendered = render_entries_within(tail, page_budget())
    entries = []
    for p, parts in zip(tail, rendered, strict=True):
        if parts is None:
            continue
        message = p.get("message")
        role = message.get("role", "") if isinstance(message, dict) else ""
        entries.append(
            {
                "payload": p,
                "id": p.get("id"),
                "type": bounded(p.get("type", "")),
                "role": bounded(role),
                "parts": parts,
            }
        )
    return {"entries": entries, "hidden": hidden + len(tail) - len(entries)}


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
    job = chat.active_run(access.session)
    return JsonResponse(
        {
            "active": str(job.pk) if job else None,
            "status": job.status if job else None,
            "run": chat.run_state(access.session) if job else None,
        }
    )


urlpatterns = [
    path("s/<str:session_id>/chat/send/", send, name="chat_send"),
    path("s/<str:session_id>/chat/stop/", stop, name="chat_stop"),
    path("s/<str:session_id>/chat/model/", switch_model, name="chat_model"),
    path("s/<str:session_id>/chat/transcript/", transcript, name="chat_transcript"),
    path("s/<str:session_id>/chat/state/", state, name="chat_state"),
]
