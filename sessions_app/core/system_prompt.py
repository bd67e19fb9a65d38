"""System prompt assembly and project context file discovery (SPEC section 6).

Layout of the default prompt, in order:

1. role line
2. ``Available tools:`` one line per tool, then a note that the project may
   add tools of its own
3. ``Guidelines:`` the file-exploration bullet (when bash is there without
   grep/find/ls), each tool's own bullets in tool order, the caller's extra
   bullets, and the two that are always present (be concise, show file paths
   clearly); each bullet once
4. a pointer to piweb's own documentation
5. optional appended text
6. ``<project_context>`` with one ``<project_instructions path="...">`` per
   context file
7. ``<available_skills>`` (only when the ``read`` tool is available)
8. ``Current date: YYYY-MM-DD``
9. ``Current working directory: CWD``

A custom prompt replaces items 1-4 only.

The structure is pi 0.80.2's ``buildSystemPrompt`` exactly.  The fixed words
(role line, the note after the tools, the exploration bullet, the two bullets
always present, the docs pointer) are a :class:`PromptWording`; the tools bring
their own line and bullets (:class:`ToolInfo`).  ``PIWEB_WORDING`` is ours and
the default.  pi's own words are not in this repository: the conformance tests
read them from pi (its golden outputs or its package) at test time and pass
them in as a :class:`PromptWording`, which rebuilds pi's prompt exactly.  The
remaining differences are listed in ``docs/PI_COMPATIBILITY.md``.  Besides the prompt text,
:func:`build_system_prompt` returns a breakdown (named sections whose texts
concatenate to the exact prompt, the context files and skills used, and any
warnings) for the UI's context inspector.

No Django imports, and no file opened here: context files are read through the file
source the caller passes (``core/skills.FileSource``; the server's reads only beneath
the folders the session may use, see docs/SANDBOX.md).  This is part of the pure
context core.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .skills import (
    BROKEN_LINK,
    DIR,
    OUTSIDE,
    SKILLS_INTRO,
    FileSource,
    LoadSkillsResult,
    Skill,
    format_skills_for_prompt,
)

__all__ = [
    "CONTEXT_FILE_CANDIDATES",
    "ContextFile",
    "ContextFilesResult",
    "FileSource",
    "PIWEB_WORDING",
    "PromptSection",
    "PromptWording",
    "PromptWarning",
    "SystemPromptResult",
    "ToolInfo",
    "build_guidelines",
    "build_system_prompt",
    "default_agent_dir",
    "default_docs_pointer",
    "format_project_context",
    "load_context_files",
    "project_directories",
]

#: Looked for in every directory, in this order; the first readable one wins.
CONTEXT_FILE_CANDIDATES = ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")

DEFAULT_DOCS_DIR = str(Path(__file__).resolve().parents[2] / "docs")

ROLE_LINE = (
    "You are a skilled software engineer at work in piweb, a browser workspace for coding-agent "
    "sessions. You help the user with their code: you look at files, run commands, change code "
    "and create files."
)
TOOLS_NOTE = "The project may give you more tools than the ones listed here."
EXPLORE_WITH_BASH = "Explore the file system through bash (ls, rg, find)"
ALWAYS = (
    "Keep your replies short",
    "Name file paths plainly whenever you talk about or change files",
)


@dataclass(frozen=True)
class ToolInfo:
    """A tool as the prompt lists it: its name, a one-line description, and the
    guideline bullets it adds.

    A tool with an empty description still counts for the guidelines but is
    not listed under "Available tools".
    """

    name: str
    description: str = ""
    guidelines: tuple[str, ...] = ()


@dataclass(frozen=True)
class ContextFile:
    path: str
    content: str


@dataclass(frozen=True)
class PromptWarning:
    source: str  # "context_files" | "skills"
    path: str
    message: str
    code: str = ""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {
            "source": self.source,
            "path": self.path,
            "message": self.message,
            "code": self.code,
        }


@dataclass
class ContextFilesResult:
    files: list[ContextFile] = field(default_factory=list)
    warnings: list[PromptWarning] = field(default_factory=list)


@dataclass(frozen=True)
class PromptSection:
    """One piece of the prompt.  ``text`` includes its leading separators."""

    name: str
    text: str
    files: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "text": self.text, "files": list(self.files)}


@dataclass
class SystemPromptResult:
    prompt: str
    sections: list[PromptSection]
    context_files: list[ContextFile]
    skills: list[Skill]  # the skills actually listed in the prompt
    skills_included: bool  # whether the skills block could be shown (read tool present)
    custom_prompt_used: bool
    warnings: list[PromptWarning]

    def section(self, name: str) -> PromptSection | None:
        return next((s for s in self.sections if s.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "sections": [s.to_dict() for s in self.sections],
            "contextFiles": [{"path": f.path, "chars": len(f.content)} for f in self.context_files],
            "skills": [s.to_dict() for s in self.skills],
            "skillsIncluded": self.skills_included,
            "customPromptUsed": self.custom_prompt_used,
            "warnings": [w.to_dict() for w in self.warnings],
        }


# --------------------------------------------------------------------------
# context files
# --------------------------------------------------------------------------


def default_agent_dir() -> str:
    """Global agent directory: ``$PIWEB_AGENT_DIR``, ``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``."""
    for var in ("PIWEB_AGENT_DIR", "PI_CODING_AGENT_DIR"):
        value = os.environ.get(var)
        if value:
            return os.path.abspath(os.path.expanduser(value))
    return os.path.join(os.path.expanduser("~"), ".pi", "agent")


def _read_candidate(
    path: str, files: FileSource
) -> tuple[str | None, PromptWarning | None, PromptWarning | None]:
    """(content, fatal warning, soft warning) for one candidate path, read through ``files``.

    Absent files give (None, None, None).  A candidate that exists but cannot
    be read (a directory, a dangling symlink, a link leading out of the folders
    ``files`` may read, permission or I/O error) gives a fatal warning so the
    caller tries the next candidate.  Invalid UTF-8 is not fatal: like pi
    (Node's utf-8 decoding), bad bytes become U+FFFD, and we add a soft warning
    so the inspector can show it.
    """
    kind = files.kind(path)
    if kind is None:
        return None, None, None

    def warn(code: str, message: str) -> PromptWarning:
        return PromptWarning(source="context_files", path=path, message=message, code=code)

    refused = _REFUSED_KINDS.get(kind)
    if refused is not None:
        return None, warn(*refused), None
    try:
        raw = files.read(path)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return (
            None,
            warn("unreadable", f"could not be read ({reason}); trying the next candidate"),
            None,
        )
    try:
        return raw.decode("utf-8"), None, None
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        return (
            text,
            None,
            warn("invalid_utf8", "is not valid UTF-8; undecodable bytes were replaced"),
        )


_REFUSED_KINDS = {
    BROKEN_LINK: ("broken_symlink", "is a symlink to a missing file; trying the next candidate"),
    DIR: ("is_directory", "is a directory, not a file; trying the next candidate"),
    OUTSIDE: (
        "outside",
        "leads outside the folders this session may read (a link out of the workspace); "
        "it was not read; trying the next candidate",
    ),
}


def _context_file_in(
    directory: str, files: FileSource, warnings: list[PromptWarning]
) -> ContextFile | None:
    for name in CONTEXT_FILE_CANDIDATES:
        path = os.path.join(directory, name)
        content, fatal, soft = _read_candidate(path, files)
        if fatal is not None:
            warnings.append(fatal)
            continue
        if content is None:
            continue
        if soft is not None:
            warnings.append(soft)
        return ContextFile(path=path, content=content)
    return None


def project_directories(cwd: str, top: str | None = None) -> list[str]:
    """The directories context files are looked for in, outermost first: every one from
    ``top`` (default: the filesystem root) down to ``cwd``; just ``cwd`` when ``top`` is
    not one of its ancestors."""
    chain: list[str] = []
    current = os.path.abspath(cwd)
    stop = os.path.abspath(top) if top is not None else None
    while True:
        chain.append(current)
        parent = os.path.dirname(current)
        if parent == current or current == stop:
            break
        current = parent
    if stop is not None and chain[-1] != stop:
        chain = chain[:1]
    return list(reversed(chain))


def load_context_files(
    cwd: str | None,
    agent_dir: str | None = None,
    *,
    files: FileSource,
    top: str | None = None,
) -> ContextFilesResult:
    """Discover project context files through ``files`` (the core opens nothing itself).

    The global agent directory comes first, then every directory from ``top``
    (default: the filesystem root) down to ``cwd`` (outermost first, ``cwd``
    last; none when ``cwd`` is None).  At most one file per directory; a file
    (by its identity in ``files``: device and inode) is never included twice,
    e.g. when ``cwd`` is the agent directory.
    """
    result = ContextFilesResult()
    seen: set[Hashable] = set()

    def add(found: ContextFile | None) -> None:
        if found is None:
            return
        try:
            key = files.identity(found.path)
        except OSError:
            key = found.path
        if key in seen:
            return
        seen.add(key)
        result.files.append(found)

    agent = os.path.abspath(agent_dir) if agent_dir is not None else default_agent_dir()
    if files.kind(agent) == DIR:
        add(_context_file_in(agent, files, result.warnings))
    if cwd is not None:
        for directory in project_directories(cwd, top):
            add(_context_file_in(directory, files, result.warnings))
    return result


def format_project_context(files: Sequence[ContextFile]) -> str:
    """The ``<project_context>`` block (with its leading blank line), or ``""``."""
    if not files:
        return ""
    parts = ["\n\n<project_context>\n\n", "Project-specific instructions and guidelines:\n\n"]
    for f in files:
        parts.append(
            f'<project_instructions path="{f.path}">\n{f.content}\n</project_instructions>\n\n'
        )
    parts.append("</project_context>\n")
    return "".join(parts)


# --------------------------------------------------------------------------
# prompt pieces
# --------------------------------------------------------------------------


def build_guidelines(
    tool_names: Iterable[str],
    extra: Iterable[str] = (),
    wording: PromptWording | None = None,
) -> list[str]:
    """Guideline bullets (without the leading ``- ``), in pi's order: the exploration
    bullet when bash is there without grep, find or ls; then ``extra`` (the tools' own
    bullets and the caller's); then the two that are always there. Blank bullets are
    dropped, the others trimmed, and each is given once."""
    wording = wording or PIWEB_WORDING
    names = set(tool_names)
    out: list[str] = []

    def add(text: str) -> None:
        text = text.strip()
        if text and text not in out:
            out.append(text)

    if "bash" in names and not names & {"grep", "find", "ls"}:
        add(wording.explore_with_bash)
    for text in extra:
        add(text)
    for text in wording.always:
        add(text)
    return out


def default_docs_pointer(docs_dir: str = DEFAULT_DOCS_DIR) -> str:
    return (
        "piweb documentation (open it only when the user asks about piweb itself: sessions, branches, "
        "summaries, compaction, context files or skills):\n"
        f"- Docs folder: {docs_dir}"
    )


@dataclass(frozen=True)
class PromptWording:
    """The fixed words of the default prompt; its structure does not depend on them.

    ``tools_note`` is the paragraph after the tool list ("" for none),
    ``explore_with_bash`` the bullet given when bash is the only way to explore
    files, ``always`` the bullets every prompt ends its guidelines with,
    ``skills_intro`` the lines above the skills list.
    """

    role_line: str
    docs_pointer: str
    tools_note: str = TOOLS_NOTE
    explore_with_bash: str = EXPLORE_WITH_BASH
    always: tuple[str, ...] = ALWAYS
    skills_intro: str = SKILLS_INTRO


PIWEB_WORDING = PromptWording(ROLE_LINE, default_docs_pointer())


def _as_tool(item: ToolInfo | Mapping[str, Any] | tuple[str, str] | str) -> ToolInfo:
    if isinstance(item, ToolInfo):
        return item
    if isinstance(item, str):
        return ToolInfo(item)
    if isinstance(item, Mapping):
        return ToolInfo(
            str(item.get("name", "")),
            str(item.get("description") or ""),
            tuple(item.get("guidelines") or ()),
        )
    name, description = item
    return ToolInfo(name, description or "")


def _format_date(date: _dt.date | _dt.datetime | str | None) -> str:
    if date is None:
        return _dt.date.today().isoformat()
    if isinstance(date, _dt.datetime):
        return date.date().isoformat()
    if isinstance(date, _dt.date):
        return date.isoformat()
    return str(date)


def _skills_and_warnings(
    skills: Sequence[Skill | Mapping[str, Any]] | LoadSkillsResult | None,
) -> tuple[list[Skill], list[PromptWarning]]:
    if skills is None:
        return [], []
    if isinstance(skills, LoadSkillsResult):
        warnings = [
            PromptWarning(source="skills", path=d.path, message=d.message, code=d.code)
            for d in skills.diagnostics
        ]
        return list(skills.skills), warnings
    return [s if isinstance(s, Skill) else Skill.from_dict(s) for s in skills], []


def build_system_prompt(
    cwd: str,
    tools: Sequence[ToolInfo | Mapping[str, Any] | tuple[str, str] | str],
    date: _dt.date | _dt.datetime | str | None = None,
    custom_prompt: str | None = None,
    append: str | None = None,
    context_files: Sequence[ContextFile] | ContextFilesResult | None = None,
    skills: Sequence[Skill | Mapping[str, Any]] | LoadSkillsResult | None = None,
    docs_pointer: str | None = None,
    *,
    agent_dir: str | None = None,
    source: FileSource | None = None,
    extra_guidelines: Sequence[str] = (),
    wording: PromptWording = PIWEB_WORDING,
) -> SystemPromptResult:
    """Assemble the system prompt.

    ``context_files``: ``None`` discovers them with :func:`load_context_files`
    (using ``agent_dir``, reading through ``source``); pass a list (or a :class:`ContextFilesResult`) to use
    pre-loaded ones, ``[]`` for none.  ``skills``: a list of skills, or a
    :class:`LoadSkillsResult` whose diagnostics become warnings.  They are only
    listed when a tool named ``read`` exists.  ``docs_pointer``: ``None`` for
    the wording's pointer, ``""`` to leave it out.  ``wording``: piweb's by
    default; the conformance tests pass pi's, read from pi.  ``extra_guidelines``
    come after the tools' own bullets.  ``date`` defaults to
    today.  A non-empty ``custom_prompt`` replaces role, tools, guidelines and
    docs pointer; everything after that is kept.
    """
    tool_infos = [_as_tool(t) for t in tools]
    tool_names = [t.name for t in tool_infos]
    warnings: list[PromptWarning] = []

    if context_files is None:
        if source is None:
            raise TypeError("build_system_prompt: pass context_files, or a source to read them")
        discovered = load_context_files(cwd, agent_dir, files=source)
        files, context_warnings = discovered.files, discovered.warnings
    elif isinstance(context_files, ContextFilesResult):
        files, context_warnings = list(context_files.files), list(context_files.warnings)
    else:
        files, context_warnings = list(context_files), []
    warnings.extend(context_warnings)

    skill_list, skill_warnings = _skills_and_warnings(skills)
    warnings.extend(skill_warnings)

    sections: list[PromptSection] = []
    if custom_prompt:
        sections.append(PromptSection("custom_prompt", custom_prompt))
    else:
        listed = [t for t in tool_infos if t.description]
        tools_text = (
            "\n".join(f"- {t.name}: {t.description}" for t in listed) if listed else "(none)"
        )
        bullets = [g for t in tool_infos for g in t.guidelines] + list(extra_guidelines)
        guideline_text = "\n".join(f"- {g}" for g in build_guidelines(tool_names, bullets, wording))
        sections.append(PromptSection("role", wording.role_line))
        note = f"\n\n{wording.tools_note}" if wording.tools_note else ""
        sections.append(PromptSection("tools", f"\n\nAvailable tools:\n{tools_text}{note}"))
        sections.append(PromptSection("guidelines", f"\n\nGuidelines:\n{guideline_text}"))
        pointer = wording.docs_pointer if docs_pointer is None else docs_pointer
        if pointer:
            sections.append(PromptSection("docs", f"\n\n{pointer}"))

    if append:
        sections.append(PromptSection("append", f"\n\n{append}"))

    if files:
        sections.append(
            PromptSection(
                "project_context", format_project_context(files), files=tuple(f.path for f in files)
            )
        )

    skills_included = "read" in tool_names
    listed_skills: list[Skill] = []
    if skills_included:
        skills_text = format_skills_for_prompt(skill_list, wording.skills_intro)
        if skills_text:
            listed_skills = [s for s in skill_list if not s.disable_model_invocation]
            sections.append(
                PromptSection(
                    "skills", skills_text, files=tuple(s.file_path for s in listed_skills)
                )
            )

    sections.append(PromptSection("date", f"\nCurrent date: {_format_date(date)}"))
    sections.append(
        # pi writes backslashes as slashes whatever the platform.
        PromptSection("cwd", f"\nCurrent working directory: {cwd.replace(chr(92), '/')}")
    )

    return SystemPromptResult(
        prompt="".join(s.text for s in sections),
        sections=sections,
        context_files=files,
        skills=listed_skills,
        skills_included=skills_included,
        custom_prompt_used=bool(custom_prompt),
        warnings=warnings,
    )
