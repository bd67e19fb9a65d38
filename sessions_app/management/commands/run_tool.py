"""`manage.py run_tool SESSION_ID TOOL 'JSON_ARGS'`: run one of the agent's tools exactly
as the agent would for that session; print the result's text, exit 1 on a tool error."""

import sys

from django.core.management.base import BaseCommand

from sessions_app.agent.tools import TOOLS_BY_NAME, execute_tool
from sessions_app.management.commands._tool_context import tool_context_for


class Command(BaseCommand):
    help = (
        "Run one agent tool (read, bash, edit, write, grep, find, ls) for a session with JSON "
        "arguments, exactly as the agent would; exit non-zero when the tool reports an error."
    )

    def add_arguments(self, parser):
        parser.add_argument("session_id", help="The session's id (pi header id).")
        parser.add_argument("tool", help=f"One of: {', '.join(TOOLS_BY_NAME)}.")
        parser.add_argument("json_args", nargs="?", default="{}", help="A JSON object.")

    def handle(self, *args, session_id, tool, json_args, **options):
        ctx = tool_context_for(session_id)
        result = execute_tool(tool, json_args, ctx)
        sys.stdout.write(result.text.rstrip("\n") + "\n")
        sys.stdout.flush()
        sys.exit(1 if result.is_error else 0)
