"""pi's coding tools, our own implementation: read, bash, edit, write, grep, find, ls.

Each tool has pi 0.80.2's name and argument schema (the same property names, types,
required fields and ``additionalProperties``; ``tests/unit/test_tool_schemas.py`` reads
pi's schemas from the pinned package and compares them), our own description, prompt
line and guidelines, and pi's result contract (text blocks plus ``details``, and pi's
notices). The default set is pi's, :data:`DEFAULT_TOOL_NAMES` (read, bash, edit,
write); grep, find and ls are offered when a session or a model profile names them
(:func:`select_tools`), as pi's ``--tools`` does. Every path goes through
:class:`~sessions_app.agent.paths.Workspace`, so ``..``, absolute paths outside the
workspace and symlinks that escape are refused.

:func:`execute_tool` is the one entry point: it parses and validates the arguments
against the schema and turns every failure (bad JSON, schema violation, unknown tool,
path escape, OS error, abort) into an error result for the model (``is_error``), never
an exception.

The file tools never open by path: every open goes through the workspace's
descriptor-based ``open`` (see ``paths.py`` and ``safefs.py``), so a symlink or ``..``
leading outside is refused when the file is opened, even one swapped in by a command
running at the same time. Only regular files are read or written (a FIFO or device is
refused rather than blocking the worker).
"""

from __future__ import annotations

import base64
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import pathspec

from sessions_app.core.jsutil import utf16_len
from sessions_app.core.truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    FIND_DEFAULT_LIMIT,
    GREP_DEFAULT_LIMIT,
    LS_DEFAULT_LIMIT,
    StreamSnapshot,
    append_notice,
    find_notice,
    format_size,
    grep_notice,
    ls_notice,
    read_output_text,
    truncate_head,
    truncate_line,
)

from . import edits as edit_text
from . import safefs
from .paths import Workspace, WorkspaceError, output_file_factory
from .providers.common import parse_json_args
from .sandbox import SandboxConfig, SandboxUnavailable
from .shell import CommandGuard, ShellOutcome, command_problem, run_shell, write_refusal
from .signals import AbortSignal

MAX_READ_BYTES = 64 * 1024 * 1024  # bigger files: the model uses bash (sed -n, head)
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_GREP_FILE_BYTES = 64 * 1024 * 1024
DEFAULT_BASH_TIMEOUT = 180.0
BIG = 2**53 - 1  # "no line limit" (JS Number.MAX_SAFE_INTEGER)


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


def text_result(text: str, details: dict | None = None, is_error: bool = False) -> ToolResult:
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

    def openai_spec(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def _param(kind: str, description: str) -> dict[str, str]:
    """One parameter of a tool's schema."""
    return {"type": kind, "description": description}


def _schema(
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


# --------------------------------------------------------------------------- read

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime_type(head: bytes) -> str | None:
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _check_size(path: str, size: int, ctx: ToolContext, verb: str) -> None:
    """Refuse a file over the tools' size limit before reading any of it (the whole file
    would sit in the worker's memory, several times over for an edit)."""
    limit = ctx.max_file_bytes
    if limit and size > limit:
        raise ToolError(
            f"{path} is {format_size(size)}, over the {format_size(limit)} the {verb} tool "
            f"opens (PIWEB_TOOL_MAX_FILE_MB). Use bash to work on parts of it (sed -n, "
            "head, tail, grep; sed -i or a script to change it)."
        )


def _read(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path = args["path"]
    try:
        fd, _absolute = ctx.workspace.open_fd(
            path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY, for_read=True
        )
    except FileNotFoundError:
        raise ToolError(f"File not found: {path}") from None
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        os.close(fd)
        raise ToolError(f"{path} is a directory, not a file. Use ls to list it.")
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ToolError(f"{path} is not a regular file.")
    size = info.st_size
    with open(fd, "rb") as fh:
        head = fh.read(16)
        mime = image_mime_type(head)
        if mime:
            if size > MAX_IMAGE_BYTES:
                raise ToolError(f"Image {path} is too large ({size} bytes).")
            data = head + fh.read()
            ctx.check_abort()
            return ToolResult(
                [
                    {"type": "text", "text": f"Read image file [{mime}]"},
                    {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": mime},
                ]
            )
        _check_size(path, size, ctx, "read")
        raw = head + fh.read()
    ctx.check_abort()
    text = raw.decode("utf-8", errors="replace")
    offset = args.get("offset")
    limit = args.get("limit")
    offset = int(offset) if offset is not None else None
    limit = int(limit) if limit is not None else None
    try:
        output, truncation = read_output_text(text, path, offset, limit)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    details = {"truncation": truncation.to_pi_dict()} if truncation is not None else None
    return text_result(output, details)


READ = Tool(
    name="read",
    description=(
        "Show a file. Text comes back as it is; an image (PNG, JPEG, GIF "
        "or WebP) comes back as an attachment. A text answer stops after "
        f"{DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB, whichever comes first, "
        "and then says which offset continues it: page through a long file with offset and "
        "limit until you have what you need."
    ),
    parameters=_schema(
        {
            "path": _param("string", "The file, relative to the working directory or absolute"),
            "offset": _param("number", "First line to show, counting from 1"),
            "limit": _param("number", "How many lines to show at most"),
        },
        ["path"],
    ),
    execute=_read,
    read_only=True,
    snippet="Show the contents of a file (text or image)",
    guidelines=("Look at files with read rather than with cat or sed in bash.",),
)

# --------------------------------------------------------------------------- bash


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
    parameters=_schema(
        {
            "command": _param("string", "The command line for bash"),
            "timeout": _param(
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

# --------------------------------------------------------------------------- edit


def prepare_edit_arguments(args: dict[str, Any]) -> dict[str, Any]:
    """What models send besides the schema's shape, as pi accepts it: ``edits`` as a JSON
    string holding the list, and the older single ``oldText``/``newText`` pair (added to
    ``edits`` as one more replacement)."""
    if not isinstance(args, dict):
        return args
    out = dict(args)
    if isinstance(out.get("edits"), str):
        try:
            parsed = json.loads(out["edits"])
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            out["edits"] = parsed
    if isinstance(out.get("oldText"), str) and isinstance(out.get("newText"), str):
        listed = list(out["edits"]) if isinstance(out.get("edits"), list) else []
        listed.append({"oldText": out.pop("oldText"), "newText": out.pop("newText")})
        out["edits"] = listed
    return out


def _edit(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path, edits = args["path"], args["edits"]
    if not edits:
        raise ToolError("The edit has no replacements: edits needs at least one entry.")
    ctx.check_abort()
    if problem := write_refusal(ctx.bash_guard, f"edit {path}"):
        raise ToolError(problem)
    try:
        fd, _absolute = ctx.workspace.open_fd(path, os.O_RDWR | os.O_NONBLOCK | os.O_NOCTTY)
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        code = {FileNotFoundError: "ENOENT", IsADirectoryError: "EISDIR"}.get(type(exc), "EACCES")
        raise ToolError(f"Cannot edit {path}: it cannot be opened ({code}).") from None
    try:
        return _edit_fd(fd, path, edits, ctx)
    finally:
        os.close(fd)


def _edit_fd(fd: int, path: str, edits: list[dict], ctx: ToolContext) -> ToolResult:
    if not safefs.is_regular(fd):
        raise ToolError(f"Cannot edit {path}: it is not a regular file.")
    _check_size(path, os.fstat(fd).st_size, ctx, "edit")
    raw = safefs.read_all(fd).decode("utf-8", errors="replace")
    ctx.check_abort()
    bom, content = edit_text.split_bom(raw)
    ending = edit_text.line_ending(content)
    try:
        old, new = edit_text.apply_edits(edit_text.to_lf(content), edits, path)
    except edit_text.EditError as exc:
        raise ToolError(str(exc)) from None
    ctx.check_abort()
    final = bom + edit_text.from_lf(new, ending)
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    safefs.write_all(fd, final.encode("utf-8", errors="surrogatepass"))
    diff, first = edit_text.display_diff(old, new)
    details: dict[str, Any] = {"diff": diff, "patch": edit_text.unified_patch(path, old, new)}
    if first is not None:
        details["firstChangedLine"] = first
    return text_result(f"Successfully replaced {len(edits)} block(s) in {path}.", details)


EDIT = Tool(
    name="edit",
    description=(
        "Change one file by replacing exact pieces of its text. Each entry of edits names "
        "an oldText that occurs exactly once in the file as it is now and the newText to "
        "put there. All entries are matched against that same original text (not one "
        "after the other), so they must not overlap: changes that touch the same or "
        "neighbouring lines belong in one entry. Quote only as much text as makes each "
        "oldText unique, not whole unchanged stretches between two changes."
    ),
    parameters=_schema(
        {
            "path": _param("string", "The file, relative to the working directory or absolute"),
            "edits": {
                "type": "array",
                "description": (
                    "The replacements, each matched against the original file; regions "
                    "must not overlap or nest (merge close changes into one entry)"
                ),
                "items": _schema(
                    {
                        "oldText": _param(
                            "string",
                            (
                                "Text to replace, character for character; it must occur "
                                "once in the original file and not overlap another entry"
                            ),
                        ),
                        "newText": _param("string", "What replaces it"),
                    },
                    ["oldText", "newText"],
                    closed=True,
                ),
            },
        },
        ["path", "edits"],
        closed=True,
    ),
    execute=_edit,
    snippet="Replace exact text in a file, several separate places in one call if needed",
    guidelines=(
        "Make targeted changes with edit; every edits[].oldText has to match the file exactly.",
        "For several places in one file, send one edit call with several entries in edits[] "
        "rather than one call per place.",
        "All edits[].oldText of a call are looked up in the file as it was before the call, "
        "not after the earlier entries: entries must not overlap or nest; join changes that "
        "are close together into one entry.",
        "Quote no more in edits[].oldText than it takes to be unique in the file; leave out "
        "unchanged stretches.",
    ),
    prepare=prepare_edit_arguments,
)

# --------------------------------------------------------------------------- write


def _write(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path, content = args["path"], args["content"]
    if problem := write_refusal(ctx.bash_guard, f"write {path}"):
        raise ToolError(problem)
    absolute = ctx.workspace.resolve(path)
    if os.path.isdir(absolute):
        raise ToolError(f"{path} is a directory.")
    ctx.workspace.make_parents(path)
    ctx.check_abort()
    data = content.encode("utf-8", errors="surrogatepass")
    try:
        fd, _ = ctx.workspace.open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY)
    except IsADirectoryError:
        raise ToolError(f"{path} is a directory.") from None
    try:
        if not safefs.is_regular(fd):
            raise ToolError(f"{path} is not a regular file.")
        os.ftruncate(fd, 0)
        safefs.write_all(fd, data)
    finally:
        os.close(fd)
    return text_result(f"Successfully wrote {utf16_len(content)} bytes to {path}")


WRITE = Tool(
    name="write",
    description=(
        "Put the given text in a file, replacing whatever it held; a missing file is "
        "created, and so are missing folders on its path."
    ),
    parameters=_schema(
        {
            "path": _param("string", "The file, relative to the working directory or absolute"),
            "content": _param("string", "The file's complete new text"),
        },
        ["path", "content"],
    ),
    execute=_write,
    snippet="Write a whole file (a new one, or a full replacement)",
    guidelines=("Keep write for new files and complete rewrites; use edit for changes.",),
)

# --------------------------------------------------------------------------- walking


class _Ignores:
    """.gitignore rules from the workspace root down to the directory being walked."""

    def __init__(self, workspace: Workspace):
        self.workspace = workspace
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}

    def _spec(self, directory: str) -> pathspec.GitIgnoreSpec | None:
        if directory not in self._specs:
            spec = None
            gitignore = os.path.join(directory, ".gitignore")
            try:
                text = _read_in_root(self.workspace, gitignore, follow=False)
                spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
            except OSError:
                pass
            self._specs[directory] = spec
        return self._specs[directory]

    def ignored(self, path: str, is_dir: bool) -> bool:
        root = self.workspace.root
        directory = os.path.dirname(path)
        chain = []
        while True:
            chain.append(directory)
            if directory == root or len(directory) <= len(root):
                break
            directory = os.path.dirname(directory)
        for base in chain:
            spec = self._spec(base)
            if spec is None:
                continue
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            if is_dir:
                rel += "/"
            if spec.match_file(rel):
                return True
        return False


def _read_in_root(
    workspace: Workspace, path: str, *, follow: bool, max_bytes: int | None = None
) -> str:
    """The text of the regular file ``path`` (a real path under the root), opened beneath
    the root; OSError when it is missing, not regular, too big or leads outside."""
    fd = workspace.open_in_root(
        workspace.root_relative(path), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY, follow=follow
    )
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"not a regular file: {path}")
        if max_bytes is not None and info.st_size > max_bytes:
            raise OSError(f"too large: {path}")
        return safefs.read_all(fd).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def walk(start: str, ctx: ToolContext, *, include_dirs: bool = False) -> Iterator[tuple[str, bool]]:
    """(path, is_dir) under ``start`` in sorted order: .git skipped, .gitignore respected,
    hidden files included. Directories are listed through descriptors opened beneath the
    workspace root with no symlink followed, so a walk never leaves the workspace, even
    when a directory is swapped for a symlink while it runs. A symlink is reported only
    when it points inside the workspace, and never descended into."""
    workspace = ctx.workspace
    ignores = _Ignores(workspace)
    stack = [start]
    while stack:
        ctx.check_abort()
        directory = stack.pop()
        try:
            fd = workspace.open_in_root(
                workspace.root_relative(directory), os.O_RDONLY | os.O_DIRECTORY, follow=False
            )
        except OSError:
            continue
        try:
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        finally:
            os.close(fd)
        subdirs = []
        for entry in entries:
            if entry.name == ".git":
                continue
            path = os.path.join(directory, entry.name)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if entry.is_symlink():
                    target = workspace.open_in_root(
                        workspace.root_relative(path), os.O_PATH, follow=True
                    )
                    try:
                        if stat.S_ISDIR(os.fstat(target).st_mode):
                            continue  # never descend through symlinks
                    finally:
                        os.close(target)
            except OSError:
                continue  # gone, or points outside the workspace
            if ignores.ignored(path, is_dir):
                continue
            if is_dir:
                subdirs.append(path)
                if include_dirs:
                    yield path, True
            else:
                yield path, False
        stack.extend(reversed(subdirs))


def _glob_spec(pattern: str) -> pathspec.PathSpec:
    return pathspec.PathSpec.from_lines("gitwildmatch", [pattern])


# --------------------------------------------------------------------------- grep


def _limit_arg(args: dict[str, Any], default: int) -> int:
    limit = args.get("limit")
    return max(1, int(limit)) if limit is not None else default


def _listing_tool(
    *,
    name: str,
    description: str,
    properties: dict[str, Any],
    required: list[str],
    limit_help: str,
    execute: Callable[[dict[str, Any], ToolContext], ToolResult],
    snippet: str,
) -> Tool:
    """grep, find or ls: read-only, at most ``limit`` items (the last parameter)."""
    return Tool(
        name=name,
        description=description,
        parameters=_schema({**properties, "limit": _param("number", limit_help)}, required),
        execute=execute,
        read_only=True,
        snippet=snippet,
    )


def _listing_result(
    lines: list[str],
    limit_details: dict[str, Any],
    notice: Callable[[bool], str | None],
    more_details: dict[str, Any] | None = None,
) -> ToolResult:
    """A grep, find or ls answer: the lines cut at the byte cap, with the notice
    (``notice(bytes_truncated)``) and pi's details in pi's key order."""
    truncation = truncate_head("\n".join(lines), BIG)
    details = dict(limit_details)
    if truncation.truncated:
        details["truncation"] = truncation.to_pi_dict()
    details.update(more_details or {})
    return text_result(append_notice(truncation.content, notice(truncation.truncated)), details)


@dataclass
class _GrepHits:
    """The lines grep gives back, and what was cut on the way."""

    limit: int
    context: int
    out: list[str] = field(default_factory=list)
    matches: int = 0
    lines_truncated: bool = False

    @property
    def limit_reached(self) -> bool:
        return self.matches >= self.limit

    def search(self, name: str, lines: list[str], regex: re.Pattern) -> None:
        """Each match in one file with its context lines, until the limit."""
        for number, line in enumerate(lines, start=1):
            if not regex.search(line):
                continue
            self.matches += 1
            first = max(1, number - self.context) if self.context else number
            last = min(len(lines), number + self.context) if self.context else number
            for current in range(first, last + 1):
                cut = truncate_line(lines[current - 1].replace("\r", ""))
                self.lines_truncated = self.lines_truncated or cut.was_truncated
                sep = ":" if current == number else "-"
                self.out.append(f"{name}{sep}{current}{sep} {cut.text}")
            if self.limit_reached:
                return


def _grep_regex(args: dict[str, Any]) -> re.Pattern:
    pattern = args["pattern"]
    flags = re.IGNORECASE if args.get("ignoreCase") else 0
    source = re.escape(pattern) if args.get("literal") else pattern
    try:
        return re.compile(source, flags)
    except re.error as exc:
        raise ToolError(f"Invalid regex pattern {pattern!r}: {exc}") from None


def _text_lines(ctx: ToolContext, path: str) -> list[str] | None:
    """A file's lines for grep; None for one that cannot be read or is binary (as
    ripgrep skips it)."""
    try:
        text = _read_in_root(ctx.workspace, path, follow=True, max_bytes=MAX_GREP_FILE_BYTES)
    except OSError:
        return None
    if "\x00" in text[:8192]:
        return None
    lines = edit_text.to_lf(text).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _grep(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    search = ctx.workspace.resolve(args.get("path") or ".")
    try:
        with ctx.workspace.open(args.get("path") or ".", os.O_PATH) as (fd, _):
            is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
    except FileNotFoundError:
        raise ToolError(f"Path not found: {search}") from None
    context = int(args.get("context") or 0)
    hits = _GrepHits(limit=_limit_arg(args, GREP_DEFAULT_LIMIT), context=max(context, 0))
    regex = _grep_regex(args)
    glob = args.get("glob")
    glob_spec = _glob_spec(glob) if glob else None

    def display(path: str) -> str:
        if is_dir:
            rel = os.path.relpath(path, search)
            if rel and not rel.startswith(".."):
                return rel.replace(os.sep, "/")
        return os.path.basename(path)

    files = walk(search, ctx) if is_dir else iter([(search, False)])
    for path, _ in files:
        if hits.limit_reached:
            break
        name = display(path)
        if glob_spec is not None and not glob_spec.match_file(name):
            continue
        lines = _text_lines(ctx, path)
        if lines is None:
            continue
        hits.search(name, lines, regex)
        ctx.check_abort()
    if hits.matches == 0:
        return text_result("No matches found")
    cap = hits.limit if hits.limit_reached else None
    return _listing_result(
        hits.out,
        {"matchLimitReached": cap} if cap else {},
        lambda cut: grep_notice(cap, cut, hits.lines_truncated),
        {"linesTruncated": True} if hits.lines_truncated else {},
    )


GREP = _listing_tool(
    name="grep",
    description=(
        "Look for a regular expression (or plain text) in files and get the matching lines "
        "as path:line: text. Files that .gitignore excludes are skipped. At most "
        f"{GREP_DEFAULT_LIMIT} matches or {DEFAULT_MAX_BYTES // 1024}KB come back, and a "
        "line longer than 500 characters is cut."
    ),
    properties={
        "pattern": _param("string", "What to look for: a regular expression, or text with literal"),
        "path": _param(
            "string", "A folder or a file to search (the working directory if left out)"
        ),
        "glob": _param("string", "Only files whose name matches this glob, such as '*.py'"),
        "ignoreCase": _param("boolean", "Ignore upper and lower case (off if left out)"),
        "literal": _param("boolean", "Take pattern as plain text, not a regular expression"),
        "context": _param("number", "Lines to show before and after each match (none if left out)"),
    },
    required=["pattern"],
    limit_help=f"Most matches to return ({GREP_DEFAULT_LIMIT} if left out)",
    execute=_grep,
    snippet="Search inside files for a pattern (skips what .gitignore excludes)",
)

# --------------------------------------------------------------------------- find


def _find(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = args["pattern"]
    search = _directory_arg(args, ctx)
    effective_limit = _limit_arg(args, FIND_DEFAULT_LIMIT)
    spec = _glob_spec(pattern)
    by_path = "/" in pattern.rstrip("/")
    results: list[str] = []
    for path, is_dir in walk(search, ctx, include_dirs=True):
        rel = os.path.relpath(path, search).replace(os.sep, "/")
        subject = rel if by_path else os.path.basename(path)
        if spec.match_file(subject + ("/" if is_dir and not by_path else "")) or spec.match_file(
            subject
        ):
            results.append(rel + ("/" if is_dir else ""))
            if len(results) >= effective_limit:
                break
    if not results:
        return text_result("No files found matching pattern")
    limit_reached = effective_limit if len(results) >= effective_limit else None
    details: dict[str, Any] = {"resultLimitReached": limit_reached} if limit_reached else {}
    return _listing_result(results, details, lambda cut: find_notice(limit_reached, cut))


FIND = _listing_tool(
    name="find",
    description=(
        "List the files whose path matches a glob, relative to the folder searched. Files "
        f"that .gitignore excludes are skipped. At most {FIND_DEFAULT_LIMIT} paths or "
        f"{DEFAULT_MAX_BYTES // 1024}KB come back."
    ),
    properties={
        "pattern": _param("string", "The glob, such as '*.py', '**/*.json' or 'src/**/test_*.py'"),
        "path": _param("string", "The folder to search (the working directory if left out)"),
    },
    required=["pattern"],
    limit_help=f"Most paths to return ({FIND_DEFAULT_LIMIT} if left out)",
    execute=_find,
    snippet="Find files by name with a glob (skips what .gitignore excludes)",
)

# --------------------------------------------------------------------------- ls


def _directory_arg(args: dict[str, Any], ctx: ToolContext) -> str:
    """The real path of the ``path`` argument, which must be a directory in the workspace."""
    directory = ctx.workspace.resolve(args.get("path") or ".")
    try:
        with ctx.workspace.open(args.get("path") or ".", os.O_PATH) as (fd, _):
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                raise ToolError(f"Not a directory: {directory}")
    except FileNotFoundError:
        raise ToolError(f"Path not found: {directory}") from None
    return directory


def _ls(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    directory = _directory_arg(args, ctx)
    effective_limit = _limit_arg(args, LS_DEFAULT_LIMIT)
    workspace = ctx.workspace
    try:
        fd = workspace.open_in_root(
            workspace.root_relative(directory), os.O_RDONLY | os.O_DIRECTORY, follow=True
        )
        try:
            names = os.listdir(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise ToolError(f"Cannot read directory: {exc.strerror or exc}") from None
    names.sort(key=lambda n: (n.lower(), n))
    results: list[str] = []
    limit_reached = False
    for name in names:
        if len(results) >= effective_limit:
            limit_reached = True
            break
        rel = workspace.root_relative(os.path.join(directory, name))
        suffix = ""
        try:  # a symlink counts as a directory only when it leads to one inside
            entry_fd = workspace.open_in_root(rel, os.O_PATH, follow=True)
            try:
                suffix = "/" if stat.S_ISDIR(os.fstat(entry_fd).st_mode) else ""
            finally:
                os.close(entry_fd)
        except OSError:
            pass
        results.append(name + suffix)
    if not results:
        return text_result("(empty directory)")
    cap = effective_limit if limit_reached else None
    details: dict[str, Any] = {"entryLimitReached": cap} if cap else {}
    return _listing_result(results, details, lambda cut: ls_notice(cap, cut))


LS = _listing_tool(
    name="ls",
    description=(
        "Show what a folder holds, in alphabetical order, hidden entries included; folders "
        f"end with '/'. At most {LS_DEFAULT_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB "
        "come back."
    ),
    properties={
        "path": _param("string", "The folder (the working directory if left out)"),
    },
    required=[],
    limit_help=f"Most entries to return ({LS_DEFAULT_LIMIT} if left out)",
    execute=_ls,
    snippet="List the entries of a folder",
)

# --------------------------------------------------------------------------- registry

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


def parse_arguments(raw: str | dict | None) -> tuple[dict[str, Any] | None, str | None]:
    """Tool-call arguments as a dict, or an error message when they are not a JSON object."""
    if isinstance(raw, dict):
        return raw, None
    args, problem = parse_json_args(raw)
    return (None, problem) if problem else (args, None)


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
    raw_arguments: str | dict | None,
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
