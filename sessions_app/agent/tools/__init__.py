"""pi's coding tools, our own implementation: read, bash, edit, write, grep, find, ls.

Each tool has pi 0.80.2's name and argument schema (the same property names, types,
required fields and ``additionalProperties``; ``tests/conformance/test_tools_pi.py`` reads
pi's schemas from the pinned package and compares them), our own description, prompt
line and guidelines, and pi's result contract (text blocks plus ``details``, and pi's
notices). The default set is pi's, :data:`DEFAULT_TOOL_NAMES` (read, bash, edit,
write); grep, find and ls are offered when a session or a model profile names them
(:func:`select_tools`), as pi's ``--tools`` does. Every path goes through
:class:`~sessions_app.agent.paths.Workspace`, so ``..``, absolute paths outside the
workspace and symlinks that escape are refused.

One module per tool holds its function and its :class:`~.base.Tool` (``read``,
``bash``, ``edit``, ``write``, ``grep``, ``find``, ``ls``); ``base`` holds what a tool is
made of and ``listing`` what grep, find and ls share. This package is the registry:
:data:`ALL_TOOLS`, :func:`select_tools`, and :func:`execute_tool`, the one entry point: it
parses and validates the arguments against the schema and turns every failure (bad
JSON, schema violation, unknown tool, path escape, OS error, abort) into an error result
for the model (``is_error``), never an exception.

The file tools never open by path: every open goes through the workspace's
descriptor-based ``open`` (see ``paths.py`` and ``safefs.py``), so a symlink or ``..``
leading outside is refused when the file is opened, even one swapped in by a command
running at the same time. Only regular files are read or written (a FIFO or device is
refused rather than blocking the worker).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from ..paths import WorkspaceError
from ..providers.streaming import parse_json_args
from ..sandbox import SandboxUnavailable
from .base import Tool, ToolContext, ToolError, ToolResult, text_result
from .bash import BASH
from .edit import EDIT
from .find import FIND
from .grep import GREP
from .ls import LS
from .read import READ
from .write import WRITE

__all__ = [
    "ALL_TOOLS",
    "DEFAULT_TOOLS",
    "DEFAULT_TOOL_NAMES",
    "TOOLS_BY_NAME",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "execute_tool",
    "parse_arguments",
    "select_tools",
    "text_result",
    "validate_arguments",
]

ALL_TOOLS: tuple[Tool, ...] = (READ, BASH, EDIT, WRITE, GREP, FIND, LS)
TOOLS_BY_NAME: dict[str, Tool] = {t.name: t for t in ALL_TOOLS}
#: The tools a session gets unless it or its model profile names others (pi's default).
DEFAULT_TOOL_NAMES: tuple[str, ...] = ("read", "bash", "edit", "write")
DEFAULT_TOOLS: tuple[Tool, ...] = tuple(TOOLS_BY_NAME[n] for n in DEFAULT_TOOL_NAMES)


def select_tools(names: Any) -> tuple[Tool, ...]:
    """The tools named in ``names`` (a list, or a comma-separated string as pi's
    ``--tools`` takes it), in that order, unknown names left out; None or nothing
    usable gives the default set."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    if not names:
        return DEFAULT_TOOLS
    chosen: list[Tool] = []
    for name in names:
        tool = TOOLS_BY_NAME.get(name) if isinstance(name, str) else None
        if tool is not None and tool not in chosen:
            chosen.append(tool)
    return tuple(chosen) or DEFAULT_TOOLS


def parse_arguments(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as a dict, and an error message when they are not a JSON
    object (the dict is then empty)."""
    if isinstance(raw, dict):
        return raw, None
    return parse_json_args(raw)


def validate_arguments(tool: Tool, args: dict[str, Any]) -> str | None:
    """None when ``args`` satisfies the tool's schema, else a readable error message."""
    validator = jsonschema.Draft202012Validator(tool.parameters)
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    lines = []
    for err in errors:
        where = "/".join(str(p) for p in err.absolute_path) or "root"
        lines.append(f"  - {where}: {err.message}")
    return (
        f'Validation failed for tool "{tool.name}":\n'
        + "\n".join(lines)
        + f"\n\nReceived arguments:\n{json.dumps(args, indent=2, ensure_ascii=False)}"
    )


def execute_tool(
    name: str,
    raw_arguments: str | dict[str, Any] | None,
    ctx: ToolContext,
    tools: dict[str, Tool] | None = None,
) -> ToolResult:
    """Run one tool call; every failure becomes an error result (never raises)."""
    registry = tools if tools is not None else TOOLS_BY_NAME
    tool = registry.get(name)
    if tool is None:
        return text_result(f"Tool {name} not found", {}, True)
    args, problem = parse_arguments(raw_arguments)
    if problem is None and tool.prepare is not None:
        args = tool.prepare(args)
    if problem is None:
        problem = validate_arguments(tool, args)
    if problem is not None:
        return text_result(problem, {}, True)
    if ctx.abort.is_set():
        return text_result("Operation aborted", {}, True)
    try:
        return tool.execute(args, ctx)
    except (ToolError, WorkspaceError, SandboxUnavailable) as exc:
        return text_result(str(exc), {}, True)
    except FileNotFoundError as exc:
        return text_result(f"File not found: {exc.filename or exc}", {}, True)
    except PermissionError as exc:
        return text_result(f"Permission denied: {exc.filename or exc}", {}, True)
    except IsADirectoryError as exc:
        return text_result(f"Is a directory: {exc.filename or exc}", {}, True)
    except OSError as exc:
        return text_result(f"{exc.__class__.__name__}: {exc}", {}, True)
    except Exception as exc:  # a bug in a tool must reach the model, not kill the run
        return text_result(f"Tool {name} failed: {exc.__class__.__name__}: {exc}", {}, True)
