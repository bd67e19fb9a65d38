"""Chat: send a message or `!cmd`, queue one for the running agent, stop a run, switch
the model.

Where a run lives: in a Celery worker, as a Job of kind ``agent_run``
(``services/jobs/agent_run.py`` runs it). The web process
only records the user's entry and the job (one transaction) and enqueues it, so a run
survives page reloads, second tabs, dropped websockets and web-process restarts, and
works whichever web process a viewer is connected to: the worker publishes every event
to the session's channel-layer group and keeps the in-progress state (streamed text,
tool calls, the latest bash snapshot) in Redis with a TTL, from which a page that
(re)connects renders the run as it is now.

One run per branch at a time, several branches of one session at once: a run owns the
branch below the entry it started from (``selectors/runs.py``). Sending locks the
session row and refuses while an active run covers the leaf (it started on the leaf's
path); a partial unique index on Job (one queued/running agent_run per session and
starting entry) backs that up in the database. A second submit on a running branch gets
a clear "busy" error; the page queues it instead (:func:`queue_message`: a steer or a
follow-up for that branch's run, which the run takes at pi's points, see
``agent/loop.py``). A message sent from another node of the tree starts its own run.

Stop crosses processes through Redis: the view sets the run's abort key, the run polls
it (every 0.2 s) and triggers its AbortSignal, which closes the LLM stream and kills the
bash process group. Stop, the queue and the live state are the run's (its branch's).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.db import IntegrityError, transaction

from sessions_app.agent.loop import now_ms
from sessions_app.agent.paths import WorkspaceError
from sessions_app.agent.sandbox import SandboxUnavailable
from sessions_app.agent.shell import command_problem
from sessions_app.core.errors import ServiceError
from sessions_app.core.images import ImageError, check_count, image_blocks, takes_images
from sessions_app.core.pi_config import THINKING_LEVELS
from sessions_app.models import Job, QueuedMessage, Session
from sessions_app.selectors import jobs as jobs_selectors
from sessions_app.selectors import prompt_templates, workspaces
from sessions_app.selectors.llm.catalog import HOW_TO_CONFIGURE, find_model, model_profiles
from sessions_app.selectors.llm.keys import ModelUnavailable
from sessions_app.selectors.llm.resolution import thinking_for
from sessions_app.selectors.model_input import model_input
from sessions_app.selectors.pi_file import pi_writing_since
from sessions_app.selectors.runs import active_run, run_of
from sessions_app.selectors.shared_state import redis_client, redis_key
from sessions_app.services import (
    resources,
    sandboxing,
    sessions,
)
from sessions_app.services.jobs import agent_run, lifecycle

log = logging.getLogger(__name__)

ABORT_TTL = 3600
MAX_MESSAGE_CHARS = 200_000


class ChatError(ServiceError):
    """A request the chat refuses, with the message to show (`ChatError(message, code)`:
    the status is the class's)."""

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message, code=code or None)


class RunBusy(ChatError):
    code = "busy"
    status = 409


class QueueGone(ChatError):
    code = "gone"
    status = 409


class ChatUnavailable(ChatError):
    code = "unavailable"
    status = 503


# ----------------------------------------------------------------------------- sending


@dataclass(frozen=True)
class Parsed:
    mode: str  # "agent" | "bash"
    text: str
    exclude: bool = False


def parse_input(text: str) -> Parsed:
    text = (text or "").strip()
    if not text:
        raise ChatError("Type a message (or !command to run a shell command).", "empty")
    if len(text) > MAX_MESSAGE_CHARS:
        raise ChatError(
            f"The message is too long (over {MAX_MESSAGE_CHARS} characters).", "too_long"
        )
    if text.startswith("!!"):
        command = text[2:].strip()
        if not command:
            raise ChatError("Give a command after !!.", "empty")
        _check_command(command)
        return Parsed("bash", command, exclude=True)
    if text.startswith("!"):
        command = text[1:].strip()
        if not command:
            raise ChatError("Give a command after !.", "empty")
        _check_command(command)
        return Parsed("bash", command)
    return Parsed("agent", text)


def _expanded(session: Session, user, parsed: Parsed) -> Parsed:
    """A message to the model as pi sends it: a ``/skill:name`` command or a prompt
    template expanded (selectors/prompt_templates.py); anything else as typed."""
    if parsed.mode != "agent" or not parsed.text.startswith("/"):
        return parsed
    text = prompt_templates.expanded_text(session, user, parsed.text)
    if text == parsed.text:
        return parsed
    if not text.strip():
        raise ChatError(
            f"{parsed.text.split()[0]} expands to nothing: its template is empty.", "empty"
        )
    if len(text) > MAX_MESSAGE_CHARS:
        raise ChatError(
            f"{parsed.text.split()[0]} expands to over {MAX_MESSAGE_CHARS} characters.", "too_long"
        )
    return Parsed("agent", text)


def _check_command(command: str) -> None:
    problem = command_problem(command)
    if problem:
        raise ChatError(problem, "bad_command")


def _attached_images(images, parsed: Parsed, model: dict) -> list[dict]:
    """The image blocks of a message to a model that takes images (see core/images.py)."""
    if not images:
        return []
    if parsed.mode != "agent":
        raise ChatError("Images go with a message to the model, not with a !command.", "images")
    if not takes_images(model):
        raise ChatError(
            f"{model.get('provider')}/{model.get('id')} does not take images: switch to a "
            "model that does (its catalog input includes image) or send the text alone.",
            "images_unsupported",
        )
    try:
        return image_blocks(
            images,
            max_bytes=settings.PIWEB_CHAT_IMAGE_MAX_BYTES,
            max_count=settings.PIWEB_CHAT_IMAGE_MAX_COUNT,
        )
    except ImageError as exc:
        raise ChatError(str(exc), "bad_image") from None


def check_image_count(count: int) -> None:
    """Refuse a message with too many images before the view reads any of them."""
    try:
        check_count(count, settings.PIWEB_CHAT_IMAGE_MAX_COUNT)
    except ImageError as exc:
        raise ChatError(str(exc), "bad_image") from None


def send_message(session: Session, user, text: str, images=()) -> Job:
    """Record the user's message (or `!cmd`) and queue the run. Raises ChatError.

    `images`: the bytes of image files that go with the message (pi's image blocks, after
    the text block); with images the text may be empty."""
    images = list(images or ())
    parsed = Parsed("agent", "") if images and not (text or "").strip() else parse_input(text)
    parsed = _expanded(session, user, parsed)
    if pi_writing_since(session) is not None:
        raise ChatError(
            "pi is writing this session right now: the chat waits until pi has been quiet "
            f"for {settings.PIWEB_PI_QUIET_SECONDS:g} seconds. Fork it to go on here now.",
            "pi_writing",
        )
    resolved = None
    if parsed.mode == "agent":
        # The run uses the model the leaf records, with the key of the person sending.
        try:
            resolved = model_input(session).resolved(user)
        except ModelUnavailable as exc:
            raise ChatError(str(exc), "no_key") from None
        if resolved is None:
            raise ChatError(HOW_TO_CONFIGURE, "no_model")
    attached = _attached_images(images, parsed, resolved.model if resolved else {})
    try:
        workspaces.session_cwd(session)
    except WorkspaceError:
        where = workspaces.session_workspace(session).cwd or "none"
        raise ChatError(
            f"This session's folder ({where}) cannot be used here. Choose where to continue "
            "with \u201cContinue in\u2026\u201d above the chat: its own folder where the server "
            "allows it, one of your workspaces, or a new one.",
            "workspace",
        ) from None
    if parsed.mode == "bash":
        try:
            sandboxing.check_available()
        except SandboxUnavailable as exc:
            raise ChatError(str(exc), "sandbox") from None
        guard = resources.command_guard(session)
        refusal = guard.before(parsed.text) if guard.before is not None else None
        if refusal:
            raise ChatError(refusal, "resources")
    try:
        with transaction.atomic():
            locked = sessions.lock_session(session.pk)
            # A run whose worker died must not keep the session busy (the worker's
            # sweeper would fail it too, a few seconds later).
            lifecycle.sweep(session=locked, kinds=[Job.Kind.AGENT_RUN])
            busy = active_run(locked)
            if busy is not None:
                raise RunBusy(
                    "A run is already in progress on this branch. Wait for it to finish or "
                    "press Stop, then send again (or send from another node: a branch of "
                    "its own runs beside it)."
                )
            params: dict[str, Any] = {"mode": parsed.mode}
            if resolved is not None:
                params["key_source"] = resolved.key_source
            if parsed.mode == "agent":
                entry = sessions.append_entry(
                    locked,
                    {
                        "type": "message",
                        "message": {
                            "role": "user",
                            "content": [{"type": "text", "text": parsed.text}, *attached],
                            "timestamp": now_ms(),
                        },
                    },
                    actor=user,
                )
                params["parent"] = entry.pi_id
            else:
                params.update(
                    command=parsed.text,
                    exclude=parsed.exclude,
                    parent=locked.leaf_pi_id,
                )
            job = agent_run.create(
                locked,
                actor=user,
                params=params,
                model=f"{resolved.provider}/{resolved.model_id}"[:200] if resolved else "",
            )
    except IntegrityError:
        raise RunBusy("A run is already in progress on this branch.") from None
    session.refresh_from_db()
    return job


def is_held(job: Job) -> bool:
    """Is this run waiting behind its user's other runs (see jobs/agent_run.py)?"""
    return agent_run.is_held(job)


def _target_run(session: Session, run_id=None) -> Job | None:
    """The run a request names (`run_id`, one of the session's active runs), else the
    run on the session's leaf."""
    if run_id:
        return run_of(session, run_id)
    return active_run(session)


def queue_message(
    session: Session, user, text: str, mode: str, run_id: str | None = None
) -> QueuedMessage:
    """Queue a message for a branch's active run (`run_id`, else the run on the leaf): a
    steer (delivered after the current tool calls, before the next model request) or a
    follow-up (when the run would end)."""
    if mode not in QueuedMessage.Mode.values:
        raise ChatError(f"Unknown queue mode: {mode!r}.", "bad_mode")
    parsed = parse_input(text)
    if parsed.mode != "agent":
        raise ChatError("A !command cannot be queued: run it once the agent is done.", "bash")
    parsed = _expanded(session, user, parsed)
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        job = _target_run(locked, run_id)
        if job is None:
            raise ChatError("Nothing is running: send the message instead.", "not_running")
        item = QueuedMessage.objects.create(
            session=locked, run=job, mode=mode, text=parsed.text, created_by=user
        )
        agent_run.publish_queue(locked, job)
        sessions.record_activity(locked, user, "chat_queued", mode=mode)
    return item


def cancel_queued(session: Session, user, item_id: int | None) -> None:
    """Take a queued message back before the run delivers it (the session lock makes
    cancel and delivery one or the other)."""
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        item = jobs_selectors.queued_item(locked, item_id)
        if item is None:
            raise QueueGone("This message was already delivered or cancelled.")
        run = item.run
        item.delete()
        agent_run.publish_queue(locked, run)
        sessions.record_activity(locked, user, "chat_unqueued")


def _take_back_queue(session: Session, job: Job) -> str:
    """Empty the run's queue (steers first, then follow-ups, oldest first) and give back
    its texts, as pi puts them back in its editor when a run is stopped."""
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        items = list(agent_run.queue_of(locked, job))
        if not items:
            return ""
        QueuedMessage.objects.filter(pk__in=[i.pk for i in items]).delete()
        agent_run.publish_queue(locked, job)
    steers = [i.text for i in items if i.mode == QueuedMessage.Mode.STEER]
    return "\n\n".join(steers + [i.text for i in items if i.mode != QueuedMessage.Mode.STEER])


@dataclass(frozen=True)
class Stopped:
    job: Job
    restored: str  # the queued messages' texts, for the chat box


def stop_run(session: Session, user, run_id: str | None = None) -> Stopped | None:
    """Stop a branch's active run (`run_id`, else the run on the session's leaf): cancel
    it if still queued, else signal the worker. Its queued messages come back (to the box
    of whoever stopped it). The session's other branches run on."""
    job = _target_run(session, run_id)
    if job is None:
        return None
    _stop(job)
    sessions.record_activity(session, user, "chat_stopped", job=str(job.pk))
    return Stopped(job, _take_back_queue(session, job))


def stop_runs(session: Session, user, run_ids) -> list[Job]:
    """Stop several runs of the session at once ("Stop all"); those it stopped."""
    stopped = []
    for run_id in run_ids:
        job = run_of(session, run_id)
        if job is None:
            continue
        _stop(job)
        _take_back_queue(session, job)
        stopped.append(job)
    if stopped:
        sessions.record_activity(
            session, user, "chat_stopped", job=",".join(str(j.pk) for j in stopped)
        )
    return stopped


def _stop(job: Job) -> None:
    if not lifecycle.cancel_queued(job, "Stopped before it started."):
        try:
            redis_client().set(redis_key("abort", job.pk), "1", ex=ABORT_TTL)
        except redis.RedisError as exc:
            log.warning("could not signal stop of run %s: %s", job.pk, exc)
            raise ChatUnavailable(
                "Could not reach Redis to stop the run; it is still running. Try again soon."
            ) from None


def switch_model(session: Session, user, choice: str):
    """Use another model from now on: a pi `model_change` entry ({provider, modelId}) at
    the leaf. `choice` is `provider/model-id` from the catalog, or the name of an
    environment profile (which the session then keeps as its profile)."""
    profiles = model_profiles()
    profile = profiles.get(choice)
    if profile is not None:
        provider, model_id = profile.provider, profile.model
    else:
        provider, _, model_id = (choice or "").partition("/")
        if not model_id or find_model(provider, model_id) is None:
            raise ChatError(f"Unknown model: {choice!r}.", "unknown_model")
        # An environment model picked by its catalog name: the session keeps its profile.
        profile = next(
            (p for p in profiles.values() if (p.provider, p.model) == (provider, model_id)),
            None,
        )
    with transaction.atomic():
        entry = sessions.append_entry(
            session,
            {"type": "model_change", "provider": provider, "modelId": model_id},
            actor=user,
        )
        if profile is not None:
            Session.objects.filter(pk=session.pk).update(model_profile=profile.name)
        sessions.record_activity(session, user, "model_changed", model=f"{provider}/{model_id}")
    session.refresh_from_db()
    return entry


def set_thinking_level(session: Session, user, level: str):
    """Think at another level from now on: a pi `thinking_level_change` entry at the leaf
    (clamped to what the leaf's model supports, as pi clamps it)."""
    if level not in THINKING_LEVELS:
        raise ChatError(f"Unknown thinking level: {level!r}.", "unknown_level")
    recorded = model_input(session).recorded_model
    model = find_model(recorded.get("provider"), recorded.get("modelId")) if recorded else None
    if model is None:
        try:
            resolved = model_input(session).resolved(user)
        except ModelUnavailable:
            resolved = None
        model = resolved.model if resolved is not None else None
    if model is not None:
        level = thinking_for(model, level)
    with transaction.atomic():
        entry = sessions.append_entry(
            session, {"type": "thinking_level_change", "thinkingLevel": level}, actor=user
        )
        sessions.record_activity(session, user, "thinking_changed", level=level)
    session.refresh_from_db()
    return entry
