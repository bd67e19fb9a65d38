"""The edit tool: exact replacements in one file, written back through its descriptor."""

from __future__ import annotations

import json
import os
from typing import Any

from .. import edits as edit_text
from .. import safefs
from ..shell import write_refusal
from .base import Tool, ToolContext, ToolError, ToolResult, check_size, param, schema, text_result


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


def _edit_fd(fd: int, path: str, edits: list[dict[str, Any]], ctx: ToolContext) -> ToolResult:
    if not safefs.is_regular(fd):
        raise ToolError(f"Cannot edit {path}: it is not a regular file.")
    check_size(path, os.fstat(fd).st_size, ctx, "edit")
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
    parameters=schema(
        {
            "path": param("string", "The file, relative to the working directory or absolute"),
            "edits": {
                "type": "array",
                "description": (
                    "The replacements, each matched against the original file; regions "
                    "must not overlap or nest (merge close changes into one entry)"
                ),
                "items": schema(
                    {
                        "oldText": param(
                            "string",
                            (
                                "Text to replace, character for character; it must occur "
                                "once in the original file and not overlap another entry"
                            ),
                        ),
                        "newText": param("string", "What replaces it"),
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
