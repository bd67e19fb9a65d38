"""`manage.py run_in_workspace SESSION_ID -- COMMAND`: run one shell command exactly as
the agent's bash tool would for that session (same sandbox, limits, cwd, environment)."""

import sys

from django.core.management.base import BaseCommand

from sessions_app.agent.sandbox import SandboxUnavailable
from sessions_app.agent.tools import ToolError
from sessions_app.agent.tools.bash import run_bash
from sessions_app.management.commands._tool_context import tool_context_for

TIMED_OUT_STATUS = 124
INTERRUPTED_STATUS = 130
REFUSED_STATUS = 126


class Command(BaseCommand):
    help = (
        "Run COMMAND (one shell string) in a session's workspace exactly as the agent's bash "
        "tool would; print its output (same truncation and notices) and exit with its status."
    )

    def add_arguments(self, parser):
        parser.add_argument("session_id", help="The session's id (pi header id).")
        parser.add_argument("command", nargs="+", help="The command (after --).")
        parser.add_argument(
            "--timeout", type=float, default=None, help="Seconds (default: the bash tool's)."
        )

    def handle(self, *args, session_id, command, timeout, **options):
        ctx = tool_context_for(session_id)
        arguments = {"command": " ".join(command)}
        if timeout is not None:
            arguments["timeout"] = timeout
        try:
            outcome, result = run_bash(arguments, ctx)
        except (SandboxUnavailable, ToolError) as exc:
            self.stderr.write(str(exc))
            sys.exit(REFUSED_STATUS)
        sys.stdout.write(result.text.rstrip("\n") + "\n")
        sys.stdout.flush()
        if outcome.timed_out:
            sys.exit(TIMED_OUT_STATUS)
        if outcome.aborted:
            sys.exit(INTERRUPTED_STATUS)
        sys.exit(outcome.exit_code or 0)
