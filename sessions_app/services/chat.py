"""Chat: send a message or `!cmd`, stop a run, switch the model, and run the agent.

Where a run lives: in a Celery worker, as a Job of kind ``agent_run``. The web process
only records the user's entry and the job (one transaction) and enqueues it, so a run
survives page reloads, second tabs, dropped websockets and web-process restarts, and
works whichever web process a viewer is connected to: the worker publishes every event
to the session's channel-layer group and keeps the in-progress state (streamed text,
tool calls, the latest bash snapshot) in Redis with a TTL, from which a page that
(re)connects renders the run as it is now.

One run per session at a time: sending locks the session row, refuses while an active
agent_run Job exists, and a partial unique index on Job (one queued/running agent_run
per session) backs that up in the database. A second submit gets a clear "busy" error.

Stop crosses processes through Redis: the view sets an abort key, the run polls it
(every 0.2 s) and triggers its AbortSignal, which closes the LLM stream and kills the
bash process group.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.db import IntegrityError, close_old_connections, transaction

from sessions_app.agent.loop import AgentRun, now_ms
from sessions_app.agent.paths import WorkspaceError
from sessions_app.agent.sandbox import SandboxUnavailable
from sessions_app.agent.shell import command_problem, snapshot_event
from sessions_app.agent.signals import AbortSignal
from sessions_app.agent.tools import TOOLS_BY_NAME
from sessions_app.models import FileSnapshot, Job, Session
from sessions_app.selectors import llm, workspaces
from sessions_app.selectors.model_input import model_input
from sessions_app.selectors.pi_file import pi_writing_since
from sessions_app.selectors.runs import active_run, redis_client
from sessions_app.selectors.runs import redis_key as _key
from sessions_app.services import (
    changes,
    events,
    resources,
    sandboxing,
    sessions,
)
from sessions_app.services.jobs import agent_run, compaction, lifecycle

log = logging.getLogger(__name__)

RUN_STATE_TTL = 3600
ABORT_TTL = 3600
ABORT_POLL_SECONDS = 0.2
STATE_FLUSH_SECONDS = 0.25
MAX_MESSAGE_CHARS = 200_000


class ChatError(Exception):
    """A request the chat refuses, with the message to show."""

    code = "invalid"
    status = 400

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        if code:
            self.code = code


class RunBusy(ChatError):
    code = "busy"
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


def _check_command(command: str) -> None:
    problem = command_problem(command)
    if problem:
        raise ChatError(problem, "bad_command")


def send_message(session: Session, user, text: str) -> Job:
    """Record the user's message (or `!cmd`) and queue the run. Raises ChatError."""
    parsed = parse_input(text)
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
        except llm.ModelUnavailable as exc:
            raise ChatError(str(exc), "no_key") from None
        if resolved is None:
            raise ChatError(llm.HOW_TO_CONFIGURE, "no_model")
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
        refusal = resources.command_guard(session).before(parsed.text)
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
                    "A run is already in progress on this session. Wait for it to finish or "
                    "press Stop, then send again."
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
                            "content": [{"type": "text", "text": parsed.text}],
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
        raise RunBusy("A run is already in progress on this session.") from None
    session.refresh_from_db()
    return job


def is_held(job: Job) -> bool:
    """Is this run waiting behind its user's other runs (see jobs/agent_run.py)?"""
    return agent_run.is_held(job)


def stop_run(session: Session, user) -> Job | None:
    """Stop the session's active run: cancel it if still queued, else signal the worker."""
    job = active_run(session)
    if job is None:
        return None
    if not lifecycle.cancel_queued(job, "Stopped before it started."):
        try:
            redis_client().set(_key("abort", job.pk), "1", ex=ABORT_TTL)
        except redis.RedisError as exc:
            log.warning("could not signal stop of run %s: %s", job.pk, exc)
            raise ChatUnavailable(
                "Could not reach Redis to stop the run; it is still running. Try again soon."
            ) from None
    sessions.record_activity(session, user, "chat_stopped", job=str(job.pk))
    return job


def switch_model(session: Session, user, choice: str):
    """Use another model from now on: a pi `model_change` entry ({provider, modelId}) at
    the leaf. `choice` is `provider/model-id` from the catalog, or the name of an
    environment profile (which the session then keeps as its profile)."""
    profiles = llm.model_profiles()
    profile = profiles.get(choice)
    if profile is not None:
        provider, model_id = profile.provider, profile.model
    else:
        provider, _, model_id = (choice or "").partition("/")
        if not model_id or llm.find_model(provider, model_id) is None:
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
    if level not in llm.THINKING_LEVELS:
        raise ChatError(f"Unknown thinking level: {level!r}.", "unknown_level")
    recorded = model_input(session).recorded_model
    model = llm.find_model(recorded.get("provider"), recorded.get("modelId")) if recorded else None
    if model is None:
        try:
            resolved = model_input(session).resolved(user)
        except llm.ModelUnavailable:
            resolved = None
        model = resolved.model if resolved is not None else None
    if model is not None:
        level = llm.thinking_for(model, level)
    with transaction.atomic():
        entry = sessions.append_entry(
            session, {"type": "thinking_level_change", "thinkingLevel": level}, actor=user
        )
        sessions.record_activity(session, user, "thinking_changed", level=level)
    session.refresh_from_db()
    return entry


# ----------------------------------------------------------------------------- the run


class RunState:
    """The in-progress run, mirrored to Redis (throttled) for pages that (re)connect."""

    def __init__(self, session_pk: int, run_id: str, mode: str):
        self.key = _key("run", session_pk)
        self.data: dict[str, Any] = {
            "run_id": run_id,
            "mode": mode,
            "status": "running",
            "text": "",
            "thinking": "",
            "tools": {},
            "order": [],
        }
        self.last_flush = 0.0
        self.dirty = False

    def apply(self, event: str, data: dict) -> bool:
        """Update from an event; True when it should be saved now (structural change)."""
        d = self.data
        if event == "text_delta":
            d["thinking" if data.get("kind") == "thinking" else "text"] += data.get("delta", "")
            return False
        if event == "tool_start":
            d["tools"][data["tool_call_id"]] = {
                "name": data["name"], "args": data.get("args"), "snapshot": None, "done": False,
                "is_error": False,
            }  # fmt: skip
            d["order"].append(data["tool_call_id"])
            return True
        if event == "bash_snapshot":
            tool = d["tools"].get(data["tool_call_id"])
            if tool is not None:
                tool["snapshot"] = {
                    k: v for k, v in data.items() if k not in ("run_id", "tool_call_id")
                }
            return False
        if event == "tool_end":
            tool = d["tools"].get(data["tool_call_id"])
            if tool is not None:
                tool["done"] = True
                tool["is_error"] = data.get("is_error", False)
            return True
        if event == "run_status":
            d["status"] = data.get("status", d["status"])
            return True
        return False

    def message_persisted(self, message: dict) -> None:
        if message.get("role") == "assistant":
            self.data["text"] = ""
            self.data["thinking"] = ""
        elif message.get("role") == "toolResult":
            call_id = message.get("toolCallId")
            self.data["tools"].pop(call_id, None)
            if call_id in self.data["order"]:
                self.data["order"].remove(call_id)
        self.flush(force=True)

    def flush(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last_flush < STATE_FLUSH_SECONDS:
            self.dirty = True
            return
        try:
            redis_client().set(self.key, json.dumps(self.data), ex=RUN_STATE_TTL)
        except redis.RedisError as exc:
            log.warning("could not save run state: %s", exc)
        self.last_flush = now
        self.dirty = False

    def clear(self) -> None:
        try:
            redis_client().delete(self.key)
        except redis.RedisError:
            pass


class _Watcher(threading.Thread):
    """Polls the Redis abort key while the run lives; the job's heartbeat (the
    lifecycle's, checked against the run's attempt) runs beside it."""

    def __init__(self, job: Job, attempt: int, abort: AbortSignal):
        super().__init__(name=f"run-watch-{str(job.pk)[:8]}", daemon=True)
        self.job_pk = job.pk
        self.abort = abort
        self.stopped = threading.Event()
        self.heartbeat = lifecycle.Heartbeat(job.pk, attempt)

    def start(self) -> None:
        self.heartbeat.__enter__()
        super().start()

    def run(self) -> None:
        key = _key("abort", self.job_pk)
        try:
            while not self.stopped.wait(ABORT_POLL_SECONDS):
                try:
                    if redis_client().exists(key):
                        self.abort.trigger("stopped by user")
                except redis.RedisError as exc:
                    log.warning("abort poll failed: %s", exc)
        finally:
            close_old_connections()

    def stop(self) -> None:
        self.stopped.set()
        self.join(5)
        self.heartbeat.__exit__(None, None, None)


class _Hooks:
    """RunHooks for the agent loop: the tree, the channel layer and Redis."""

    def __init__(self, session: Session, job: Job, state: RunState, parent: str | None):
        self.session = session
        self.job = job
        self.state = state
        self.parent = parent
        self.last_entry = None
        # File snapshots: the workspace's commit before the next turn's tools, and the
        # agent reply whose tool calls are running (the entry a snapshot is keyed by).
        self.files_base: str | None = None
        self.turn_entry = None
        self.unsnapshotted = None

    def emit(self, event: str, data: dict) -> None:
        structural = self.state.apply(event, data)
        events.publish_now(self.session.pk, event, data)
        self.state.flush(force=structural)

    def context(self) -> list[dict]:
        return model_input(self.session, self.parent).messages

    def persist(self, message: dict) -> None:
        llm.price_message(message)
        self.last_entry = append_on_branch(
            self.session, {"type": "message", "message": message}, self.parent
        )
        self.parent = self.last_entry.pi_id
        if message.get("role") == "assistant":
            self.turn_entry = self.last_entry
            calls = [b for b in message.get("content") or [] if b.get("type") == "toolCall"]
            # Its tools may change files: a snapshot is due (after_tools), even if the
            # run ends before the loop gets there.
            self.unsnapshotted = self.last_entry if calls else None
        self.state.message_persisted(message)
        events.publish_now(
            self.session.pk,
            "message_end",
            {
                "run_id": str(self.job.pk),
                "entry_id": self.last_entry.pi_id,
                "role": message.get("role"),
                "tool_call_id": message.get("toolCallId"),
            },
        )

    def after_tools(self) -> None:
        """A turn's tool calls have run: snapshot the files, keyed by the reply. A turn
        whose calls all were read-only tools (read, grep, find, ls) changed nothing."""
        entry, self.unsnapshotted = self.turn_entry, None
        if entry is None:
            return
        content = (entry.payload.get("message") or {}).get("content") or []
        names = [b.get("name") for b in content if b.get("type") == "toolCall"]
        if all(getattr(TOOLS_BY_NAME.get(n), "read_only", False) for n in names):
            return  # (no call at all, or only read-only ones)
        self.files_base = changes.record(
            self.session, entry, self.files_base, FileSnapshot.Kind.TURN
        )

    def compact_for_overflow(self) -> bool:
        self.emit("run_status", {"run_id": str(self.job.pk), "status": "compacting"})
        try:
            result = compaction.compact_for_overflow(self.session, leaf_pi_id=self.parent)
        except Exception as exc:
            log.warning("overflow compaction failed: %s", exc)
            return False
        if result is None or result.status != Job.Status.DONE or not result.result_entry_id:
            return False
        self.session.refresh_from_db()
        self.parent = result.result_entry.pi_id
        self.emit("run_status", {"run_id": str(self.job.pk), "status": "running"})
        return True


def append_on_branch(session: Session, payload: dict, parent: str | None):
    """Append under `parent` (the run's branch). The leaf follows only if it is still at
    `parent`: a viewer who navigated elsewhere meanwhile is not pulled back."""
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        current = locked.leaf_pi_id
        return sessions.append_entry(
            locked, payload, parent_pi_id=parent, move_leaf=current == parent
        )


def _artifact_dir(session: Session) -> str:
    return workspaces.artifact_dir(session)


def execute_run(job_id: str) -> str | None:
    """Run one queued agent_run job to the end (called by the Celery task)."""
    claimed = agent_run.claim(job_id)
    if claimed is None:
        return None
    job, attempt = claimed
    session = job.session
    mode = job.params.get("mode", "agent")
    abort = AbortSignal()
    watcher = _Watcher(job, attempt, abort)
    state = RunState(session.pk, str(job.pk), mode)
    state.flush(force=True)
    watcher.start()
    hooks = _Hooks(session, job, state, job.params.get("parent"))
    status, error = "error", ""
    try:
        workspaces.session_cwd(session, job.params.get("parent"))
        hooks.files_base = changes.begin(session)
        if mode == "bash":
            status = _run_user_bash(job, hooks, abort)
        else:
            status, error = _run_agent(job, hooks, abort)
    except Exception as exc:
        log.exception("agent run %s failed", job.pk)
        status, error = "failed", f"{exc.__class__.__name__}: {exc}"
        if mode == "agent":
            try:
                hooks.persist(
                    {
                        "role": "assistant", "content": [], "api": "openai-completions",
                        "provider": "piweb", "model": job.model or "", "usage": None,
                        "stopReason": "error", "errorMessage": f"The run failed: {error}",
                        "timestamp": now_ms(),
                    }
                )  # fmt: skip
            except Exception:
                log.exception("could not record the failure of run %s", job.pk)
    finally:
        if mode == "agent" and hooks.unsnapshotted is not None and hooks.files_base:
            try:  # a run that failed or stopped mid-turn: what its tools did still counts
                hooks.after_tools()
            except Exception:
                log.exception("snapshot after the run %s failed", job.pk)
        watcher.stop()
        state.clear()
        try:
            redis_client().delete(_key("abort", job.pk))
        except redis.RedisError:
            pass
        agent_run.finish(job, attempt, status, error, hooks.last_entry)
    if status == "done" and mode == "agent":
        _after_run(session)
    return status


def _after_run(session: Session) -> None:
    try:
        session.refresh_from_db()
        compaction.maybe_compact_after_run(session)
    except Exception:
        log.exception("post-run compaction check failed for session %s", session.pk)


def _run_agent(job: Job, hooks: _Hooks, abort: AbortSignal) -> tuple[str, str]:
    seen = model_input(job.session, hooks.parent)
    try:
        config = seen.resolved(job.created_by)
        problem = llm.HOW_TO_CONFIGURE
    except llm.ModelUnavailable as exc:
        config, problem = None, str(exc)
    if config is None:
        hooks.persist(
            {
                "role": "assistant", "content": [], "api": "openai-completions", "provider": "piweb",
                "model": "", "usage": None, "stopReason": "error",
                "errorMessage": problem, "timestamp": now_ms(),
            }
        )  # fmt: skip
        return "error", "no model configured"
    tool_ctx = sandboxing.tool_context(job.session, abort, leaf_pi_id=hooks.parent)
    run = AgentRun(
        llm=config,
        system_prompt=seen.system_prompt,
        tools=list(seen.tools),
        tool_ctx=tool_ctx,
        hooks=hooks,
        abort=abort,
        run_id=str(job.pk),
        retry=llm.retry_policy(),
        # pi's request keys: the session id (caches, session headers) and the thinking
        # level of the path (its last thinking_level_change, clamped to the model's levels)
        session_id=job.session.pi_id,
        thinking_level=str(seen.context.get("thinkingLevel") or "off"),
    )
    status = run.run()
    error = ""
    if status == "error" and hooks.last_entry is not None:
        error = (hooks.last_entry.payload.get("message") or {}).get("errorMessage", "")
    return status, error


def _run_user_bash(job: Job, hooks: _Hooks, abort: AbortSignal) -> str:
    command = job.params["command"]
    exclude = bool(job.params.get("exclude"))
    run_id = str(job.pk)
    call_id = f"user-bash-{run_id[:8]}"
    hooks.emit(
        "tool_start",
        {
            "run_id": run_id,
            "tool_call_id": call_id,
            "name": "bash",
            "args": {"command": command},
            "user": True,
        },
    )

    def on_snapshot(snap) -> None:
        hooks.emit(
            "bash_snapshot", {"run_id": run_id, "tool_call_id": call_id, **snapshot_event(snap)}
        )

    refusal = command_problem(command)  # (a run queued before send_message checked it)
    try:
        if refusal:
            outcome = None
        else:
            outcome = sandboxing.run_command(
                job.session,
                command,
                abort=abort,
                on_snapshot=on_snapshot,
                leaf_pi_id=job.params.get("parent"),
            )
    except SandboxUnavailable as exc:
        outcome = None
        refusal = str(exc)
    hooks.emit(
        "tool_end",
        {
            "run_id": run_id,
            "tool_call_id": call_id,
            "is_error": outcome is None or outcome.aborted or bool(outcome.exit_code),
        },
    )
    message: dict[str, Any] = {"role": "bashExecution", "command": command}
    if outcome is None:  # refused: nothing ran
        message.update(output=refusal, exitCode=126, cancelled=False, truncated=False)
    else:
        result = outcome.result
        output = result.truncation.content
        if outcome.limit_notices:
            output += "\n" + "\n".join(f"[{n}]" for n in outcome.limit_notices)
        message["output"] = output
        if outcome.exit_code is not None:
            message["exitCode"] = outcome.exit_code
        message["cancelled"] = outcome.aborted or outcome.timed_out
        message["truncated"] = result.truncation.truncated
        if result.full_output_path and result.truncation.truncated:
            message["fullOutputPath"] = result.full_output_path
    message["timestamp"] = now_ms()
    if exclude:
        message["excludeFromContext"] = True
    hooks.persist(message)
    if outcome is not None:
        changes.record(job.session, hooks.last_entry, hooks.files_base, FileSnapshot.Kind.BASH)
    return "aborted" if outcome is not None and outcome.aborted else "done"
