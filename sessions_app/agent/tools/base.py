"""What every tool is made of: the tool, its context, its result, and the schema helpers.

A tool's ``execute(args, ctx)`` gets arguments already checked against its schema and
answers with a :class:`ToolResult`; it raises :class:`ToolError` for a failure the model
should read (the registry's ``execute_tool`` turns it into an error result).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sessions_app.core.truncate import StreamSnapshot, format_size

from ..paths import Workspace, output_file_factory
from ..sandbox import SandboxConfig
from ..shell import CommandGuard
from ..signals import AbortSignal

MAX_READ_BYTES = 64 * 1024 * 1024  # bigger files: the model uses bash (sed -n, head)
DEFAULT_BASH_TIMEOUT = 180.0


class ToolError(Exception):
    """A failure whose message is the error text the model gets."""


@dataclass
class ToolResult:
    content: list[dict[str, Any]]
    details: dict[str, Any] | None = None
    is_error: bool = False

    @property
    def text(self) -> str:
        return "\n".join(b.get("text", "") for b in self.content if b.get("type") == "text")


def text_result(
    text: str, details: dict[str, Any] | None = None, is_error: bool = False
) -> ToolResult:
    return ToolResult([{"type": "text", "text": text}], details or None, is_error)


@dataclass
class ToolContext:
    workspace: Workspace
    artifact_dir: str
    abort: AbortSignal = field(default_factory=AbortSignal)
    on_bash_snapshot: Callable[[StreamSnapshot], None] | None = None
    bash_timeout: float = DEFAULT_BASH_TIMEOUT
    bash_env: dict[str, str] | None = None  # added to the sandbox's minimal environment
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    # Quota / disk reserve checks around each bash command (services/resources.py), and
    # what runs after one (the quota's measure).
    bash_guard: CommandGuard | None = None
    after_bash: Callable[[str], None] | None = None
    full_output_max_bytes: int | None = None  # the full-output file keeps its tail past it
    max_file_bytes: int | None = MAX_READ_BYTES  # read and edit refuse bigger files

    def check_abort(self) -> None:
        if self.abort.is_set():
            raise ToolError("Operation aborted")

    def output_file(self, prefix: str = "bash") -> Callable[[], str]:
        return output_file_factory(self.artifact_dir, prefix)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    execute: Callable[[dict[str, Any], ToolContext], ToolResult]
    read_only: bool = False
    snippet: str = ""  # the one line the system prompt lists
    guidelines: tuple[str, ...] = ()  # the tool's bullets in the prompt's guidelines
    # Turns the raw arguments into the schema's shape before validation (pi's
    # prepareArguments: forms that models send and pi accepts).
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def param(kind: str, description: str) -> dict[str, str]:
    """One parameter of a tool's schema."""
    return {"type": kind, "description": description}


def schema(
    properties: dict[str, Any], required: list[str], *, closed: bool = False
) -> dict[str, Any]:
    """An object schema as pi's typebox writes it: no ``required`` key when nothing is
    required, ``additionalProperties: false`` only where pi closes the object."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if closed:
        schema["additionalProperties"] = False
    return schema


def check_size(path: str, size: int, ctx: ToolContext, verb: str) -> None:
    """Refuse a file over the tools' size limit before reading any of it (the whole file
    would sit in the worker's memory, several times over for an edit)."""
    limit = ctx.max_file_bytes
    if limit and size > limit:
        raise ToolError(
            f"{path} is {format_size(size)}, over the {format_size(limit)} the {verb} tool "
            f"opens (PIWEB_TOOL_MAX_FILE_MB). Use bash to work on parts of it (sed -n, "
            "head, tail, grep; sed -i or a script to change it)."
        )
