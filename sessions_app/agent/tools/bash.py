"""The bash tool: one command in the sandbox, its output's tail and how it ended."""

from __future__ import annotations

from typing import Any

from sessions_app.core.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES

from ..shell import ShellOutcome, command_problem, run_shell
from .base import (
    DEFAULT_BASH_TIMEOUT,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    param,
    schema,
    text_result,
)


def run_bash(args: dict[str, Any], ctx: ToolContext) -> tuple[ShellOutcome, ToolResult]:
    """Run the bash tool's command; the shell outcome (exit code...) and the tool result."""
    command = args["command"]
    problem = command_problem(command)
    if problem:
        raise ToolError(problem)
    timeout = args.get("timeout")
    if timeout is None:
        timeout = ctx.bash_timeout
    elif timeout < 0:
        raise ToolError(
            "Invalid timeout: must be a finite number of seconds, or 0 to disable the timer"
        )
    try:
        outcome = run_shell(
            command,
            ctx.workspace.cwd,
            output_path=ctx.output_file("bash"),
            timeout=timeout or None,
            abort=ctx.abort,
            on_snapshot=ctx.on_bash_snapshot,
            env=ctx.bash_env,
            sandbox=ctx.sandbox,
            workspace=ctx.workspace.root,
            guard=ctx.bash_guard,
            full_output_max_bytes=ctx.full_output_max_bytes,
        )
    finally:
        if ctx.after_bash is not None:
            ctx.after_bash(command)
    result = outcome.result
    text, is_error = result.tool_text(
        exit_code=outcome.exit_code,
        aborted=outcome.aborted,
        timeout_seconds=timeout if outcome.timed_out else None,
    )
    if outcome.limit_notices:
        text = text + "\n\n" + "\n".join(f"[{n}]" for n in outcome.limit_notices)
    details: dict[str, Any] = {}
    if result.truncation.truncated:
        details = {
            "truncation": result.truncation.to_pi_dict(),
            "fullOutputPath": result.full_output_path,
        }
    return outcome, text_result(text, details, is_error)


def _bash(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return run_bash(args, ctx)[1]


BASH = Tool(
    name="bash",
    description=(
        "Run a command with bash in the working directory and get back what it printed "
        "(stdout and stderr together) and how it ended. Only the end of a long output comes "
        f"back: the last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB, whichever "
        "is smaller; the whole output is then kept in a file whose path the answer gives. "
        f"A command is stopped after {int(DEFAULT_BASH_TIMEOUT)} seconds unless you give "
        "another timeout (0: no limit)."
    ),
    parameters=schema(
        {
            "command": param("string", "The command line for bash"),
            "timeout": param(
                "number",
                (
                    f"Seconds before the command is stopped ({int(DEFAULT_BASH_TIMEOUT)} if "
                    "left out, 0 for no limit)"
                ),
            ),
        },
        ["command"],
    ),
    execute=_bash,
    snippet="Run shell commands (tests, builds, git, ls, rg and the like)",
)
