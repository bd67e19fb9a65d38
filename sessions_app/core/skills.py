"""Skill discovery, validation and the prompt listing.

Behaviour follows pi's skills (Agent Skills standard, lenient):

* A skill root directory is scanned like this: a directory that contains a
  ``SKILL.md`` file *is* a skill and is not descended into; otherwise the
  ``.md`` files directly inside the scanned root are skills of their own, and
  sub-directories are searched (recursively) for ``SKILL.md``.  Entries whose
  name starts with ``.`` and ``node_modules`` are skipped; symlinks are
  followed as far as the file source allows (the server's never leaves the
  checked folders), dangling ones and ones leading out are ignored, and a
  directory reached twice (a link to an ancestor) is scanned once.
* Each file starts with YAML front matter: ``name`` (defaults to the parent
  directory's name), ``description`` (required), optional
  ``disable-model-invocation`` (hides the skill from the prompt listing when
  it is exactly ``true``).  Other keys are ignored.
* Problems never raise.  They become :class:`SkillDiagnostic` entries.  Most
  are warnings and the skill still loads (bad name, name not matching the
  directory, over-long description); a missing/empty description or
  unparseable front matter means the skill is not loaded.
* The same name found twice: the first one wins, the later one is reported as
  a ``duplicate_name`` collision.  The same file reached twice (e.g. through a
  symlink) is silently loaded once.

No Django imports, and no file opened here: everything is read through the
:class:`FileSource` the caller passes.  This is part of the pure context core.
"""

from __future__ import annotations

import os
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import yaml

__all__ = [
    "BROKEN_LINK",
    "DIR",
    "FILE",
    "OUTSIDE",
    "FileSource",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "LoadSkillsResult",
    "Skill",
    "SkillDiagnostic",
    "default_skill_roots",
    "escape_xml",
    "format_skills_for_prompt",
    "load_skill_file",
    "load_skills",
    "load_skills_from_dir",
    "parse_front_matter",
    "validate_skill_name",
]

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
SKILL_FILE_NAME = "SKILL.md"

_NAME_CHARS = re.compile(r"^[a-z0-9-]+$")

# What :meth:`FileSource.kind` says a path is (None: nothing there, or out of reach).
FILE = "file"
DIR = "dir"
BROKEN_LINK = "broken_link"  # a symlink to nothing
OUTSIDE = "outside"  # a link leading out of the folders the source may read
OTHER = "other"  # a device, a FIFO, a socket


class FileSource(Protocol):
    """How the core reads files: the core never opens a path itself.

    The server passes one that opens beneath checked roots without leaving them
    (``agent/safefs.BeneathFiles``), so a user's link cannot make a root process read
    the server's files; the tests of pi's own fixtures pass one rooted at ``/``.
    """

    def kind(self, path: str) -> str | None:
        """FILE, DIR, BROKEN_LINK, OUTSIDE, OTHER, or None when nothing is there."""

    def read(self, path: str) -> bytes:
        """The bytes of a regular file (OSError otherwise)."""

    def list_dir(self, path: str) -> list[str]:
        """The names in a directory (OSError when it cannot be listed)."""

    def identity(self, path: str) -> Hashable:
        """What tells two paths of one file apart from two files (device, inode)."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    file_path: str
    base_dir: str
    source: str = "path"
    disable_model_invocation: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Skill:
        """Accept pi's camelCase shape (``filePath``, ``baseDir``, ``disableModelInvocation``) or ours."""

        def pick(*keys: str, default: Any = None) -> Any:
            for key in keys:
                if key in data:
                    return data[key]
            return default

        return cls(
            name=pick("name", default=""),
            description=pick("description", default=""),
            file_path=pick("filePath", "file_path", default=""),
            base_dir=pick("baseDir", "base_dir", default=""),
            source=pick("source", default="path"),
            disable_model_invocation=pick(
                "disableModelInvocation", "disable_model_invocation", default=False
            )
            is True,
        )

    def to_dict(self) -> dict[str, Any]:
        """pi's camelCase shape."""
        return {
            "name": self.name,
            "description": self.description,
            "filePath": self.file_path,
            "baseDir": self.base_dir,
            "source": self.source,
            "disableModelInvocation": self.disable_model_invocation,
        }


@dataclass(frozen=True)
class SkillDiagnostic:
    """One problem found while loading skills.

    ``severity`` is ``"warning"`` (skill loaded anyway), ``"error"`` (skill not
    loaded) or ``"collision"`` (a later skill with an already-used name).
    """

    code: str
    message: str
    path: str
    severity: str = "warning"
    other_path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LoadSkillsResult:
    skills: list[Skill] = field(default_factory=list)
    diagnostics: list[SkillDiagnostic] = field(default_factory=list)

    def extend(self, other: LoadSkillsResult) -> None:
        self.skills.extend(other.skills)
        self.diagnostics.extend(other.diagnostics)


# --------------------------------------------------------------------------
# front matter
# --------------------------------------------------------------------------

_FRONT_MATTER_OPEN = re.compile(r"^\s*---(?:\n|$)")


class FrontMatterError(ValueError):
    pass


class _FrontMatterLoader(yaml.SafeLoader):
    """Safe loader with YAML 1.2 booleans: only true/false, not yes/no/on/off.

    pi parses front matter with a YAML 1.2 parser, where ``yes`` is a string;
    PyYAML (YAML 1.1) would turn it into ``True``.
    """


_BOOL_TAG = "tag:yaml.org,2002:bool"
_FrontMatterLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_FrontMatterLoader.add_implicit_resolver(
    _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def parse_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Split ``text`` into (front matter mapping, body).

    Newlines are normalised and a UTF-8 BOM dropped.  No front matter (or an
    unterminated block) gives ``({}, text)``.  Invalid YAML, or YAML that is
    not a mapping, raises :class:`FrontMatterError`.
    """
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    if normalized.startswith("\ufeff"):
        normalized = normalized[1:]
    opening = _FRONT_MATTER_OPEN.match(normalized)
    if not opening:
        return {}, normalized
    start = opening.end()
    end = normalized.find("\n---", start)
    if end == -1:
        return {}, normalized
    block = normalized[start:end]
    body = normalized[end + 4 :].strip()
    try:
        data = yaml.load(block, Loader=_FrontMatterLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise FrontMatterError(f"invalid YAML front matter: {_one_line(str(exc))}") from exc
    if data is None:
        return {}, body
    if not isinstance(data, dict):
        raise FrontMatterError(f"front matter must be a mapping, got {type(data).__name__}")
    return {str(k): v for k, v in data.items()}, body


def _one_line(message: str) -> str:
    return " ".join(message.split())


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------


def validate_skill_name(name: str, parent_dir_name: str) -> list[tuple[str, str]]:
    """(code, message) pairs for everything wrong with ``name``."""
    problems: list[tuple[str, str]] = []
    if name != parent_dir_name:
        problems.append(
            ("name_mismatch", f'name "{name}" does not match parent directory "{parent_dir_name}"')
        )
    if len(name) > MAX_NAME_LENGTH:
        problems.append(
            ("name_too_long", f"name is {len(name)} characters long (limit {MAX_NAME_LENGTH})")
        )
    if not _NAME_CHARS.match(name):
        problems.append(
            (
                "name_invalid_chars",
                "name may only use lowercase letters a-z, digits 0-9 and hyphens",
            )
        )
    if name.startswith("-") or name.endswith("-"):
        problems.append(("name_hyphen_edge", "name must not begin or end with a hyphen"))
    if "--" in name:
        problems.append(("name_double_hyphen", "name must not contain two hyphens in a row"))
    return problems


def _js_length(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript counts it."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# --------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------


def load_skill_file(
    file_path: str, source: str = "path", *, files: FileSource
) -> tuple[Skill | None, list[SkillDiagnostic]]:
    """Load one skill file, read through ``files``.  Never raises; problems come back
    as diagnostics."""
    diagnostics: list[SkillDiagnostic] = []

    def diag(code: str, message: str, severity: str = "warning") -> None:
        diagnostics.append(
            SkillDiagnostic(code=code, message=message, path=file_path, severity=severity)
        )

    try:
        raw = files.read(file_path)
    except OSError as exc:
        diag("unreadable", f"cannot read skill file: {exc.strerror or exc}", "error")
        return None, diagnostics
    text = raw.decode("utf-8", errors="replace")

    try:
        front, _body = parse_front_matter(text)
    except FrontMatterError as exc:
        diag("invalid_yaml", str(exc), "error")
        return None, diagnostics

    skill_dir = os.path.dirname(file_path)
    parent_dir_name = os.path.basename(skill_dir)

    description = front.get("description")
    description_ok = True
    if description is None or (isinstance(description, str) and not description.strip()):
        diag("missing_description", "description is required; the skill is not loaded", "error")
        description_ok = False
    elif not isinstance(description, str):
        diag(
            "invalid_description", "description must be a string; the skill is not loaded", "error"
        )
        description_ok = False
    elif _js_length(description) > MAX_DESCRIPTION_LENGTH:
        diag(
            "description_too_long",
            f"description is {_js_length(description)} characters long (limit {MAX_DESCRIPTION_LENGTH})",
        )

    raw_name = front.get("name")
    if raw_name is not None and not isinstance(raw_name, str):
        diag("invalid_name", "name must be a string; using the directory name instead")
        raw_name = None
    name = raw_name or parent_dir_name
    for code, message in validate_skill_name(name, parent_dir_name):
        diag(code, message)

    if not description_ok or not isinstance(description, str):
        return None, diagnostics

    return (
        Skill(
            name=name,
            description=description,
            file_path=file_path,
            base_dir=skill_dir,
            source=source,
            disable_model_invocation=front.get("disable-model-invocation") is True,
        ),
        diagnostics,
    )


def _scan(
    directory: str, source: str, is_root: bool, files: FileSource, visited: set[Hashable]
) -> LoadSkillsResult:
    result = LoadSkillsResult()
    try:
        key = files.identity(directory)
        if key in visited:
            return result
        visited.add(key)
        names = sorted(files.list_dir(directory))
    except OSError as exc:
        if is_root:
            result.diagnostics.append(
                SkillDiagnostic(
                    code="unreadable",
                    message=f"cannot list skills directory: {exc.strerror or exc}",
                    path=directory,
                    severity="error",
                )
            )
        return result

    skill_md = os.path.join(directory, SKILL_FILE_NAME)
    if SKILL_FILE_NAME in names and files.kind(skill_md) == FILE:
        skill, diagnostics = load_skill_file(skill_md, source, files=files)
        if skill:
            result.skills.append(skill)
        result.diagnostics.extend(diagnostics)
        return result

    for name in names:
        if name.startswith(".") or name == "node_modules":
            continue
        full = os.path.join(directory, name)
        kind = files.kind(full)
        if kind == DIR:
            result.extend(_scan(full, source, False, files, visited))
        elif kind == FILE and is_root and name.endswith(".md"):
            skill, diagnostics = load_skill_file(full, source, files=files)
            if skill:
                result.skills.append(skill)
            result.diagnostics.extend(diagnostics)
    return result


def load_skills_from_dir(
    directory: str, source: str = "path", *, files: FileSource
) -> LoadSkillsResult:
    """Scan one skills root (no de-duplication).  A missing directory yields nothing."""
    if files.kind(directory) != DIR:
        return LoadSkillsResult()
    return _scan(os.path.abspath(directory), source, True, files, set())


def load_skills(roots: Iterable[str | tuple[str, str]], *, files: FileSource) -> LoadSkillsResult:
    """Load skills from several roots, in order, de-duplicating; everything is read
    through ``files``.

    ``roots`` items are a directory (source ``"path"``), a ``(directory,
    source)`` pair, or a path to a single ``.md`` skill file.  Missing roots
    are skipped silently (like pi's default locations).  The first skill with a
    given name wins; later ones yield a ``duplicate_name`` collision.
    """
    collected = LoadSkillsResult()
    collisions: list[SkillDiagnostic] = []
    by_name: dict[str, Skill] = {}
    seen: set[Hashable] = set()

    for root in roots:
        directory, source = (root, "path") if isinstance(root, str) else (root[0], root[1])
        directory = os.path.abspath(os.path.expanduser(directory))
        if directory.endswith(".md") and files.kind(directory) == FILE:
            skill, diagnostics = load_skill_file(directory, source, files=files)
            found = LoadSkillsResult([skill] if skill else [], diagnostics)
        else:
            found = load_skills_from_dir(directory, source, files=files)
        collected.diagnostics.extend(found.diagnostics)
        for skill in found.skills:
            try:
                key = files.identity(skill.file_path)
            except OSError:
                key = skill.file_path
            if key in seen:
                continue
            existing = by_name.get(skill.name)
            if existing is not None:
                collisions.append(
                    SkillDiagnostic(
                        code="duplicate_name",
                        message=f'skill name "{skill.name}" is already used by {existing.file_path}; this one is ignored',
                        path=skill.file_path,
                        severity="collision",
                        other_path=existing.file_path,
                    )
                )
                continue
            by_name[skill.name] = skill
            seen.add(key)
            collected.skills.append(skill)

    collected.diagnostics.extend(collisions)
    return collected


def default_skill_roots(
    cwd: str,
    agent_dir: str,
    home: str | None = None,
    *,
    files: FileSource,
    top: str | None = None,
) -> list[tuple[str, str]]:
    """pi's default skill locations, in priority order (the first skill of a name wins).

    As pi 0.80.2's resource loader ranks them (its package manager sorts project
    resources before user ones): project first, ``<cwd>/.pi/skills`` then
    ``.agents/skills`` in cwd and its ancestors up to the git repository root (or the
    filesystem root outside a repository), leaving out the user's own
    ``~/.agents/skills``; then user, ``<agent_dir>/skills`` and ``~/.agents/skills``.
    The walk up stops at ``top`` when given (the outermost directory the caller may
    read), and ``.git`` is looked for through ``files``.
    """
    home = home or os.path.expanduser("~")
    user_agents = os.path.join(home, ".agents", "skills")
    roots: list[tuple[str, str]] = [
        (os.path.join(os.path.abspath(cwd), ".pi", "skills"), "project")
    ]
    current = os.path.abspath(cwd)
    while True:
        candidate = os.path.join(current, ".agents", "skills")
        if os.path.abspath(candidate) != os.path.abspath(user_agents):
            roots.append((candidate, "project"))
        if files.kind(os.path.join(current, ".git")) is not None:
            break
        parent = os.path.dirname(current)
        if parent == current or current == top:
            break
        current = parent
    roots.append((os.path.join(agent_dir, "skills"), "user"))
    roots.append((user_agents, "user"))
    return roots


# --------------------------------------------------------------------------
# prompt listing
# --------------------------------------------------------------------------

_XML_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&apos;"))

# The wording below is part of the model-visible prompt format that the golden
# vectors (golden/prompt.json, formatSkillsForPrompt) pin down exactly.
#: The lines above the ``<available_skills>`` list (our words; pi's structure: a few
#: lines of instructions, a blank line, the list).
SKILLS_INTRO = (
    "Each skill below holds instructions for one kind of task.\n"
    "When a task fits a skill's description, open the skill's file with the read tool first.\n"
    "A relative path inside a skill file is relative to the skill's folder (the one holding "
    "SKILL.md): make it absolute before you use it in a tool call."
)


def escape_xml(text: str) -> str:
    for raw, escaped in _XML_ESCAPES:
        text = text.replace(raw, escaped)
    return text


def _as_skill(item: Skill | Mapping[str, Any]) -> Skill:
    return item if isinstance(item, Skill) else Skill.from_dict(item)


def format_skills_for_prompt(
    skills: Sequence[Skill | Mapping[str, Any]], intro: str = SKILLS_INTRO
) -> str:
    """The ``<available_skills>`` block (with its leading blank lines), or ``""``.

    Skills with ``disable_model_invocation`` are left out; if none remain the
    result is empty.  Name, description and location are XML-escaped.  ``intro``:
    the instructions above the list (the conformance tests pass pi's).
    """
    visible = [s for s in map(_as_skill, skills) if not s.disable_model_invocation]
    if not visible:
        return ""
    lines = [f"\n\n{intro}", "", "<available_skills>"]
    for skill in visible:
        lines.append("  <skill>")
        lines.append(f"    <name>{escape_xml(skill.name)}</name>")
        lines.append(f"    <description>{escape_xml(skill.description)}</description>")
        lines.append(f"    <location>{escape_xml(skill.file_path)}</location>")
        lines.append("  </skill>")
    lines.append("</available_skills>")
    return "\n".join(lines)
