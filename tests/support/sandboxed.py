"""A command and a tool call run in a session's sandbox, as the agent runs them."""

import json

from sessions_app.agent.tools import execute_tool
from sessions_app.services import sandboxing


def sh(session, command, **kwargs):
    """Run `command` through the session's sandbox; the outcome and its (truncated) text."""
    outcome = sandboxing.run_command(session, command, **kwargs)
    text = outcome.result.truncation.content
    return outcome, text


def tool(session, name, args, **kwargs):
    """Call the agent's tool `name` with `args` in the session's workspace."""
    return execute_tool(name, json.dumps(args), sandboxing.tool_context(session, **kwargs))
