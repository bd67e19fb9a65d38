"""The agent-run job: one chat turn (or `!cmd`) in a worker.

Its lifecycle is the common one: created and enqueued by :func:`create`, claimed and
heartbeating through the generic ``piweb.run_job`` task (``lifecycle.run_job``), run by
:func:`run` (the agent loop or the user's command, streaming over the session's group,
the in-progress state mirrored to Redis, stop polled from Redis), finished by
:func:`finish`. A run is never run twice (it has side effects: tool calls, entries), so
a run whose worker died is failed, not requeued, and so is a run nobody picked up.

Queues and fairness: a turn goes to the runs queue, a ``!cmd`` to the commands queue
(``piweb/queues.py``), each with its own worker slots. One user has at most
``PIWEB_USER_MAX_RUNS`` runs sent to the workers at once (counted over all their
sessions; the user is whoever sent it, else the session's owner): a run over that limit
is stored "held" ("queued behind your other runs") and not sent; when one of the user's
runs ends, :func:`dispatch` sends their oldest held run. The user's row lock makes the
count and the decision one step, whichever web process or worker takes it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import close_old_connections, transaction
from django.utils import timezone

from piweb import queues
from sessions_app.agent.loop import AgentRun, now_ms, request_tools
from sessions_app.agent.sandbox import SandboxUnavailable
from sessions_app.agent.shell import command_problem, snapshot_event
from sessions_app.agent.signals import AbortSignal
from sessions_app.agent.tools import TOOLS_BY_NAME
from sessions_app.models import AnswerInput, Entry, FileSnapshot, Job, QueuedMessage, Session
from sessions_app.selectors import workspaces
from sessions_app.selectors.jobs import (
    active_runs_of,
    next_queued,
    queue_of,
    queued_count,
    queued_runs,
    sent_run_count,
)
from sessions_app.selectors.llm.catalog import HOW_TO_CONFIGURE, price_message
from sessions_app.selectors.llm.keys import ModelUnavailable
from sessions_app.selectors.llm.resolution import retry_policy
from sessions_app.selectors.model_input import model_input
from sessions_app.selectors.runs import active_runs, run_covering, state_key
from sessions_app.selectors.shared_state import redis_client, redis_key
from sessions_app.services import changes, events, sandboxing, sessions
from sessions_app.services.jobs import compaction, lifecycle

log = logging.getLogger(__name__)

RUN_STATE_TTL = 3600
ABORT_POLL_SECONDS = 0.2
STATE_FLUSH_SECONDS = 0.25

Status = Job.Status
# The run's own outcome (the `run_end` event's status) -> the job's status.
OUTCOMES = {
    "done": Status.DONE,
    "aborted": Status.CANCELLED,
    "error": Status.FAILED,
    "failed": Status.FAILED,
}


HELD_NOTE = "queued behind your other runs"


def runner_of(job: Job) -> int:
    """The user a run counts against: who sent it, else the session's owner."""
    return job.created_by_id or lifecycle.session_of(job).owner_id


def _lock_user(user_id: int) -> None:
    get_user_model().objects.select_for_update().filter(pk=user_id).first()


def is_held(job: Job) -> bool:
    return job.status == Job.Status.QUEUED and bool((job.progress or {}).get("held"))


def create(session: Session, *, actor, params: dict, model: str) -> Job:
    """Store the queued run (the caller holds the session lock) and enqueue it, or hold
    it when its user already has ``PIWEB_USER_MAX_RUNS`` runs sent."""
    activity = ("chat_sent", {"mode": params["mode"]})
    fields = {"params": params, "model": model, "prepared_leaf_pi_id": params["parent"]}
    user_id = actor.pk if getattr(actor, "is_authenticated", False) else session.owner_id
    _lock_user(user_id)
    held = sent_run_count(user_id) >= max(1, settings.PIWEB_USER_MAX_RUNS)
    if held:
        fields["progress"] = {"phase": "queued", "held": True, "note": HELD_NOTE}
    return lifecycle.create(session, Job.Kind.AGENT_RUN, actor, activity, send=not held, **fields)


def dispatch(user_id: int) -> list[str]:
    """Send the user's oldest held runs while they are under their limit; their ids."""
    sent: list[str] = []
    with transaction.atomic():
        _lock_user(user_id)
        room = max(1, settings.PIWEB_USER_MAX_RUNS) - sent_run_count(user_id)
        if room <= 0:
            return sent
        waiting = (
            active_runs_of(user_id)
            .filter(status=Job.Status.QUEUED)
            .select_for_update(skip_locked=True, of=("self",))
            .order_by("created_at")
        )
        for job in waiting:
            if room <= 0:
                break
            if not is_held(job):
                continue
            job.progress = {"phase": "queued", "resent_at": timezone.now().timestamp()}
            job.save(update_fields=["progress"])
            lifecycle.publish_progress(job)
            lifecycle.enqueue(job)
            sent.append(str(job.pk))
            room -= 1
    return sent


def dispatch_waiting() -> None:
    """For every user with held runs: send what their limit allows (sweeper's safety net)."""
    users = set()
    for job in queued_runs():
        if is_held(job):
            users.add(runner_of(job))
    for user_id in users:
        dispatch(user_id)


def claim(job_id) -> tuple[Job, int] | None:
    return lifecycle.claim(job_id, kind=Job.Kind.AGENT_RUN)


def finish(job: Job, attempt: int, outcome: str, error: str = "", entry=None) -> str | None:
    """Store the run's outcome (if this attempt still holds the job); publish `run_end`."""
    return lifecycle.finish_own(
        job, attempt, OUTCOMES[outcome], error=error, entry=entry, phase=outcome, outcome=outcome
    )


def _run_end(job: Job) -> None:
    outcome = (job.progress or {}).get("outcome")
    if outcome is None:
        outcome = "cancelled" if job.status == Status.CANCELLED else "failed"
    if job.session_id is not None:  # (a run always has a session)
        events.publish(job.session_id, "run_end", {"run_id": str(job.pk), "status": outcome})
    dispatch(runner_of(job))


def _queue(job: Job) -> str:
    return queues.COMMANDS if (job.params or {}).get("mode") == "bash" else queues.RUNS


# --- the run ----------------------------------------------------------------------------


class RunState:
    """The in-progress run, mirrored to Redis (throttled) for pages that (re)connect."""

    def __init__(self, session_pk: int, run_id: str, mode: str):
        self.key = state_key(session_pk, run_id)
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
    """Polls the Redis abort key while the run lives (``lifecycle.run_job`` heartbeats
    the job beside it)."""

    def __init__(self, job: Job, abort: AbortSignal):
        super().__init__(name=f"run-watch-{str(job.pk)[:8]}", daemon=True)
        self.job_pk = job.pk
        self.abort = abort
        self.stopped = threading.Event()

    def run(self) -> None:
        key = redis_key("abort", self.job_pk)
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


class _Hooks:
    """RunHooks for the agent loop: the tree, the channel layer and Redis."""

    def __init__(self, session: Session, job: Job, state: RunState, parent: str | None):
        self.session = session
        self.job = job
        self.state = state
        self.parent = parent
        self.last_entry: Entry | None = None
        # File snapshots: the workspace's commit before the next turn's tools, and the
        # agent reply whose tool calls are running (the entry a snapshot is keyed by).
        self.files_base: str | None = None
        self.turn_entry: Entry | None = None
        self.unsnapshotted: Entry | None = None
        # (system prompt, tools) of the run's requests, set by _run_agent
        self.sent: tuple[str, list[dict[str, Any]]] | None = None

    def emit(self, event: str, data: dict) -> None:
        structural = self.state.apply(event, data)
        events.publish_now(self.session.pk, event, data)
        self.state.flush(force=structural)

    def context(self) -> list[dict]:
        return model_input(self.session, self.parent).messages

    def persist(self, message: dict) -> None:
        price_message(message)
        self.last_entry = append_on_branch(
            self.session, {"type": "message", "message": message}, self.parent
        )
        self.parent = self.last_entry.pi_id
        if message.get("role") == "assistant":
            self.turn_entry = self.last_entry
            if self.sent is not None:  # what the request carried besides the messages
                AnswerInput.objects.create(
                    entry=self.last_entry, system_prompt=self.sent[0], tools=self.sent[1]
                )
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

    def take_queued(self, mode: str) -> bool:
        """Deliver the oldest queued message of this mode onto the run's branch."""
        entry = deliver_queued(self.session, mode, self.parent, self.job)
        if entry is None:
            return False
        self.parent = entry.pi_id
        return True

    def compact_for_overflow(self) -> bool:
        self.emit("run_status", {"run_id": str(self.job.pk), "status": "compacting"})
        try:
            result = compaction.compact_for_overflow(self.session, leaf_pi_id=self.parent)
        except Exception as exc:
            log.warning("overflow compaction failed: %s", exc)
            return False
        if result is None or result.status != Job.Status.DONE or result.result_entry is None:
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


def user_message(text: str) -> dict:
    """A user's message entry, as sending one stores it."""
    return {
        "type": "message",
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "timestamp": now_ms(),
        },
    }


def publish_queue(session: Session, job: Job | None = None) -> None:
    """Tell every page of the session that a run's queue changed (after the commit)."""
    count = queued_count(session, job)
    run_id = str(job.pk) if job is not None else None
    events.publish(session.pk, "queue_changed", {"count": count, "run_id": run_id})


def deliver_queued(session: Session, mode: str, parent: str | None, job: Job | None = None):
    """Take the oldest message of `mode` queued for `job` and append it under `parent`
    as the user's message; its entry, or None. Under the session lock, like a cancel: a
    message is delivered once or cancelled, never both."""
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        item = next_queued(locked, job, mode)
        if item is None:
            return None
        entry = sessions.append_entry(
            locked,
            user_message(item.text),
            parent_pi_id=parent,
            move_leaf=locked.leaf_pi_id == parent,
            actor=item.created_by,
        )
        item.delete()
        publish_queue(locked, job)
    return entry


def start_queued_run(session: Session, job: Job, parent: str | None) -> Job | None:
    """A message queued for `job` in the moment it ended (after its last look at the
    queue) starts the next run on the same branch (under `parent`, the run's last
    entry), as sending it there would have: steering first, then follow-ups. Its other
    queued messages wait for that run."""
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        item = next_queued(locked, job, QueuedMessage.Mode.STEER) or next_queued(locked, job)
        if item is None:
            return None
        if run_covering(locked, active_runs(locked), parent) is not None:
            return None
        user = item.created_by or locked.owner
        try:
            resolved = model_input(locked, parent).resolved(user)
        except ModelUnavailable:
            resolved = None
        if resolved is None:
            return None  # it stays queued, visible and cancellable
        entry = sessions.append_entry(
            locked,
            user_message(item.text),
            parent_pi_id=parent,
            move_leaf=locked.leaf_pi_id == parent,
            actor=user,
        )
        item.delete()
        following = create(
            locked,
            actor=user,
            params={"mode": "agent", "parent": entry.pi_id, "key_source": resolved.key_source},
            model=f"{resolved.provider}/{resolved.model_id}"[:200],
        )
        queue_of(locked, job).update(run=following)
        publish_queue(locked, following)
        return following


def run(job: Job, attempt: int) -> str:
    """Run one claimed agent_run job to the end (``lifecycle.run_job`` calls it)."""
    session = lifecycle.session_of(job)
    mode = job.params.get("mode", "agent")
    abort = AbortSignal()
    watcher = _Watcher(job, abort)
    state = RunState(session.pk, str(job.pk), mode)
    state.flush(force=True)
    watcher.start()
    hooks = _Hooks(session, job, state, job.params.get("parent"))
    status, error = "error", ""
    try:
        workspaces.session_cwd(session, job.params.get("parent"))
        hooks.files_base = changes.begin(session, job.params.get("parent"))
        if mode == "bash":
            status = _run_user_bash(job, hooks, abort)
        else:
            status, error = _run_agent(job, hooks, abort)
            # An alternative's check (issue 36) runs after a run that ended, done or with
            # a provider's error (the files may still be worth checking); not after a
            # stop: the user asked for nothing more to run.
            if status in ("done", "error") and job.params.get("check"):
                _run_check(job, hooks, abort)
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
            redis_client().delete(redis_key("abort", job.pk))
        except redis.RedisError:
            pass
        finish(job, attempt, status, error, hooks.last_entry)
    if status == "done" and mode == "agent":
        _after_run(session)
    if status == "done":
        try:
            start_queued_run(session, job, hooks.parent)
        except Exception:
            log.exception("could not start the queued message of session %s", session.pk)
    return status


def _after_run(session: Session) -> None:
    try:
        session.refresh_from_db()
        compaction.maybe_compact_after_run(session)
    except Exception:
        log.exception("post-run compaction check failed for session %s", session.pk)


def _run_agent(job: Job, hooks: _Hooks, abort: AbortSignal) -> tuple[str, str]:
    seen = model_input(lifecycle.session_of(job), hooks.parent)
    try:
        config = seen.resolved(job.created_by)
        problem = HOW_TO_CONFIGURE
    except ModelUnavailable as exc:
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
    tool_ctx = sandboxing.tool_context(lifecycle.session_of(job), abort, leaf_pi_id=hooks.parent)
    hooks.sent = (seen.system_prompt, request_tools(seen.tools))
    run = AgentRun(
        llm=config,
        system_prompt=seen.system_prompt,
        tools=list(seen.tools),
        tool_ctx=tool_ctx,
        hooks=hooks,
        abort=abort,
        run_id=str(job.pk),
        retry=retry_policy(),
        # pi's request keys: the session id (caches, session headers) and the thinking
        # level of the path (its last thinking_level_change, else the default; clamped to
        # the model's levels)
        session_id=lifecycle.session_of(job).pi_id,
        thinking_level=seen.thinking_level(job.created_by),
    )
    status = run.run()
    error = ""
    if status == "error" and hooks.last_entry is not None:
        error = (hooks.last_entry.payload.get("message") or {}).get("errorMessage", "")
    return status, error


CHECK_TYPE = "piweb.check"
CHECK_PREVIEW_CHARS = 2000


def _run_check(job: Job, hooks: _Hooks, abort: AbortSignal) -> None:
    """An alternative's check command (issue 36), run once the run ended (done, or with a
    provider's error), in the branch's workspace, in the sandbox: its exit status,
    duration and the end of its output, as a custom entry (``piweb.check``: pi ignores
    it) at the end of the branch."""
    command = job.params["check"]
    started = time.monotonic()
    data: dict[str, Any] = {"command": command}
    try:
        outcome = sandboxing.run_command(
            lifecycle.session_of(job),
            command,
            abort=abort,
            leaf_pi_id=hooks.parent,
            output_prefix="check",
        )
    except SandboxUnavailable as exc:
        data.update(exitCode=None, output=str(exc)[-CHECK_PREVIEW_CHARS:])
    else:
        output = outcome.result.truncation.content
        data.update(
            exitCode=outcome.exit_code,
            output=output[-CHECK_PREVIEW_CHARS:],
            cancelled=outcome.aborted or outcome.timed_out,
        )
    data["seconds"] = round(time.monotonic() - started, 3)
    entry = append_on_branch(
        lifecycle.session_of(job),
        {"type": "custom", "customType": CHECK_TYPE, "data": data},
        hooks.parent,
    )
    hooks.parent = entry.pi_id
    events.publish_now(
        lifecycle.session_of(job).pk,
        "message_end",
        {"run_id": str(job.pk), "entry_id": entry.pi_id, "role": "check", "tool_call_id": None},
    )


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
                lifecycle.session_of(job),
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
        changes.record(
            lifecycle.session_of(job), hooks.last_entry, hooks.files_base, FileSnapshot.Kind.BASH
        )
    return "aborted" if outcome is not None and outcome.aborted else "done"


KIND = lifecycle.register(
    lifecycle.JobKind(
        kind=Job.Kind.AGENT_RUN,
        on_stale=lifecycle.FAIL,
        queue=_queue,
        on_sweep=dispatch_waiting,
        stale_error="The worker running this stopped reporting; send the message again.",
        lost_error="No worker picked this up in time; send the message again.",
        on_finish=_run_end,
        run=run,
    )
)
