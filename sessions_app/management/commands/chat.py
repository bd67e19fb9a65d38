"""chat SESSION_ID "message" [--model PROVIDER/ID] [--thinking LEVEL] [--leaf ENTRY_ID]
[--user USERNAME]: one agent turn, run here and now through the browser's chat service
(like `pi -p`). Prints the reply; exits non-zero when the turn fails."""

import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from sessions_app.core.errors import ServiceError
from sessions_app.models import Job, Session
from sessions_app.selectors import access
from sessions_app.services import chat, jobs, sessions

WAIT_SECONDS = 3600


class Command(BaseCommand):
    help = (
        "Run one agent turn in a session at its leaf (or --leaf), as the browser's chat "
        "does, and print the reply. --model and --thinking are recorded as pi records them "
        "(model_change, thinking_level_change) before the message."
    )

    def add_arguments(self, parser):
        parser.add_argument("session_id", help="the session's header id (Session.pi_id)")
        parser.add_argument("message", help="what to send (a `!cmd` runs a command)")
        parser.add_argument("--model", help="provider/model-id (or an environment profile)")
        parser.add_argument("--thinking", help="off, minimal, low, medium, high, xhigh, max")
        parser.add_argument("--leaf", help="the entry id to continue from")
        parser.add_argument("--user", help="who sends it (default: the session's owner)")

    def handle(self, *args, session_id, message, **options):
        session = Session.objects.filter(pi_id=session_id).first()
        if session is None:
            raise CommandError(f"No session with id {session_id!r}.")
        user = _sender(session, options["user"])
        job = _start_turn(session, user, message, options)
        if jobs.run_job(str(job.pk)) is None:  # a worker claimed it first
            _wait_for_end(job)
        job.refresh_from_db()
        reply = _reply_text(job)
        if reply:
            self.stdout.write(reply)
        if job.status != Job.Status.DONE:
            raise CommandError(job.error or f"The run ended {job.status}.")
        source = (job.params or {}).get("key_source")
        if source and options["verbosity"] > 1:
            self.stderr.write(f"model {job.model}, key: {source}")


def _sender(session: Session, username: str | None):
    """Who sends the message (the owner unless --user), if they may write."""
    user = session.owner
    if username:
        named = get_user_model().objects.filter(username=username).first()
        if named is None:
            raise CommandError(f"No user named {username!r}.")
        user = named
    role = access.role_for(user, session)
    if role not in (access.OWNER, access.EDITOR):
        raise CommandError(f"{user.username} may not write to this session.")
    return user


def _start_turn(session: Session, user, message: str, options: dict) -> Job:
    """--leaf, --model and --thinking as the browser sets them, then the message."""
    try:
        if options["leaf"]:
            sessions.set_leaf(session, options["leaf"], actor=user)
            session.refresh_from_db()
        if options["model"]:
            chat.switch_model(session, user, options["model"])
        if options["thinking"]:
            chat.set_thinking_level(session, user, options["thinking"])
        return chat.send_message(session, user, message)
    except (ServiceError, ValueError) as exc:  # an unknown --leaf is a NotFound
        raise CommandError(str(exc)) from None


def _wait_for_end(job: Job) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status not in Job.ACTIVE:
            return
        time.sleep(0.2)


def _reply_text(job: Job) -> str:
    entry = job.result_entry
    if entry is None:
        return ""
    message = entry.payload.get("message") or {}
    if message.get("role") != "assistant":
        return ""
    parts = [
        block.get("text", "")
        for block in message.get("content") or []
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    text = "\n".join(p for p in parts if p)
    return text or message.get("errorMessage", "")
