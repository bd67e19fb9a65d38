"""What `run_in_workspace` and `run_tool` share: a session's tool context, as the agent
gets it, with Ctrl-C aborting the command like Stop does."""

import signal

from django.core.management.base import CommandError

from sessions_app.agent.paths import WorkspaceError
from sessions_app.models import Session
from sessions_app.services import sandboxing


def tool_context_for(session_id: str):
    session = Session.objects.filter(pi_id=session_id).first()
    if session is None:
        raise CommandError(f"No session with id {session_id!r}.")
    try:
        ctx = sandboxing.tool_context(session)
    except WorkspaceError as exc:
        raise CommandError(str(exc)) from None
    signal.signal(signal.SIGINT, lambda *_: ctx.abort.trigger("interrupted"))
    return ctx
