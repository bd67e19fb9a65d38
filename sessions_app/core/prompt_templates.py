"""pi's prompt templates and skill commands: parsing a template file and expanding a message.

A prompt template is a Markdown file whose name (less ``.md``) is a slash command: typing
``/review src/app.py fast`` sends the file's body with its placeholders filled from the
arguments. The rules are pi 0.80.2's (``core/prompt-templates.js``), kept exactly:

- the arguments are split on whitespace, with single or double quotes grouping (no
  escapes; an unclosed quote runs to the end);
- ``$1``, ``$2``…: one argument ("" when missing); ``$@`` and ``$ARGUMENTS``: all of them
  joined by spaces; ``${N:-default}``: argument N, or the default when it is missing or
  empty; ``${@:N}``: the arguments from the Nth on; ``${@:N:L}``: L of them from the Nth;
- one pass over the template only: an argument holding ``$1`` stays ``$1``;
- the description is the front matter's ``description``, else the body's first non-blank
  line cut to 60 UTF-16 units (with ``...`` when it was longer); ``argument-hint`` is kept.

``/skill:name args`` becomes the skill's body in a ``<skill name=… location=…>`` block, as
pi's ``_expandSkillCommand`` builds it; the one sentence inside the block that says where
relative references point is our own wording (`SKILL_REFERENCES`).

JavaScript's ``\\s`` and ``\\d`` differ from Python's, so the patterns spell out the
characters JavaScript means.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = [
    "DESCRIPTION_CHARS",
    "SKILL_REFERENCES",
    "PromptTemplate",
    "command_parts",
    "expand_message",
    "expand_prompt_template",
    "expand_skill_command",
    "first_of_each_name",
    "is_template_file_name",
    "parse_command_args",
    "parse_template",
    "skill_block",
    "split_front_matter",
    "substitute_args",
]

DESCRIPTION_CHARS = 60  # pi cuts the first line at 60 UTF-16 units
SKILL_PREFIX = "/skill:"

# JavaScript's \s: ASCII whitespace, NBSP, the Unicode space separators, the line and
# paragraph separators and the byte order mark.
_JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_IS_SPACE = re.compile(f"[{_JS_SPACE}]")
_HUGE = 10**300  # any number past every argument list (JavaScript's parseInt gives a float)
_PLACEHOLDER = re.compile(
    r"\$\{([0-9]+):-([^}]*)\}|\$\{@:([0-9]+)(?::([0-9]+))?\}|\$(ARGUMENTS|@|[0-9]+)"
)
_COMMAND = re.compile(f"/([^{_JS_SPACE}]+)(?:[{_JS_SPACE}]+(.*))?", re.DOTALL)

#: Inside a skill block, after the opening tag: where the skill's relative paths point
#: (our words; pi's block has one sentence here).
SKILL_REFERENCES = "Relative paths in this skill are resolved against {base_dir}."


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    description: str
    content: str  # the body, front matter removed
    argument_hint: str = ""
    source: str = ""  # where it came from, for people: project, user, agent
    path: str = ""  # the file, for people ("" for one stored in piweb)


# --------------------------------------------------------------------------- expansion


def parse_command_args(text: str) -> list[str]:
    """The arguments of a command line, as pi's ``parseCommandArgs`` splits them."""
    args: list[str] = []
    current = ""
    quote = ""
    for char in text:
        if quote:
            if char == quote:
                quote = ""
            else:
                current += char
        elif char in ('"', "'"):
            quote = char
        elif _IS_SPACE.match(char):
            if current:
                args.append(current)
                current = ""
        else:
            current += char
    if current:
        args.append(current)
    return args


def _nth(args: Sequence[str], number: str) -> str | None:
    """Argument `number` (1-based, as written); None when there is none (``$0`` too)."""
    index = _number(number) - 1
    return args[index] if 0 <= index < len(args) else None


def substitute_args(content: str, args: Sequence[str]) -> str:
    """`content` with its placeholders filled, in one pass (pi's ``substituteArgs``)."""
    everything = " ".join(args)

    def fill(match: re.Match[str]) -> str:
        default_number, default, start, length, simple = match.groups()
        if default_number:
            return _nth(args, default_number) or default
        if start:
            first = max(_number(start) - 1, 0)
            if length:
                return " ".join(args[first : first + _number(length)])
            return " ".join(args[first:])
        if simple in ("ARGUMENTS", "@"):
            return everything
        return _nth(args, simple) or ""

    return _PLACEHOLDER.sub(fill, content)


def command_parts(text: str) -> tuple[str, str] | None:
    """(name, argument string) of ``/name args``, as pi matches a command; else None."""
    match = _COMMAND.fullmatch(text)
    return (match.group(1), match.group(2) or "") if match else None


def expand_prompt_template(text: str, templates: Iterable[PromptTemplate]) -> str:
    """`text` expanded when it is ``/name args`` of a template, else unchanged."""
    parts = command_parts(text)
    if parts is None:
        return text
    name, rest = parts
    for template in templates:
        if template.name == name:
            return substitute_args(template.content, parse_command_args(rest))
    return text


def skill_block(name: str, location: str, base_dir: str, body: str, args: str = "") -> str:
    """The block pi sends for ``/skill:name args`` (the skill file's body, trimmed)."""
    block = (
        f'<skill name="{name}" location="{location}">\n'
        f"{SKILL_REFERENCES.format(base_dir=base_dir)}\n\n{body}\n</skill>"
    )
    return f"{block}\n\n{args}" if args else block


def expand_skill_command(
    text: str, skills: Iterable[Any], read: Callable[[Any], str | None]
) -> str:
    """`text` as pi's ``_expandSkillCommand`` turns it: ``/skill:name args`` of a known
    skill (objects with ``name``, ``file_path``, ``base_dir``) becomes its block; an
    unknown skill, or one whose file `read` cannot give (None), stays as typed."""
    if not text.startswith(SKILL_PREFIX):
        return text
    space = text.find(" ")
    name = text[len(SKILL_PREFIX) :] if space == -1 else text[len(SKILL_PREFIX) : space]
    args = "" if space == -1 else _js_trim(text[space + 1 :])
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        return text
    raw = read(skill)
    if raw is None:
        return text
    try:
        _meta, body = split_front_matter(raw)
    except ValueError:
        return text
    return skill_block(skill.name, skill.file_path, skill.base_dir, _js_trim(body), args)


def expand_message(
    text: str,
    templates: Iterable[PromptTemplate],
    skills: Iterable[Any] = (),
    read_skill: Callable[[Any], str | None] = lambda _skill: None,
) -> str:
    """What pi sends for a typed message: the skill command first, then the template."""
    return expand_prompt_template(expand_skill_command(text, skills, read_skill), templates)


def _js_trim(text: str) -> str:
    return text.strip(_JS_SPACE)


def _number(digits: str) -> int:
    return int(digits) if len(digits) <= 300 else _HUGE


# --------------------------------------------------------------------------- the files


class _FrontMatterLoader(yaml.SafeLoader):
    """YAML 1.2 booleans (true/false only), as pi's YAML parser reads them."""


_BOOL_TAG = "tag:yaml.org,2002:bool"
_FrontMatterLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_FrontMatterLoader.add_implicit_resolver(
    _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def split_front_matter(raw: str) -> tuple[dict[str, Any], str]:
    """(front matter, body) as pi's ``parseFrontmatter`` splits a file: the block between
    a leading ``---`` and the next line starting with ``---``; the body after it trimmed,
    a file without one whole. Raises ValueError for YAML pi would refuse."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end == -1:
        return {}, text
    block, body = text[4:end], _js_trim(text[end + 4 :])
    if not block:
        return {}, body
    try:
        data = yaml.load(block, Loader=_FrontMatterLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ValueError(f"invalid front matter: {exc}") from None
    return (data if isinstance(data, dict) else {}), body


def _utf16_cut(text: str, units: int) -> tuple[str, bool]:
    """The first `units` UTF-16 units of `text` (a split pair dropped), and whether it
    was longer."""
    encoded = text.encode("utf-16-le", "surrogatepass")
    if len(encoded) <= units * 2:
        return text, False
    return encoded[: units * 2].decode("utf-16-le", "ignore"), True


def _description(meta: dict[str, Any], body: str) -> str:
    given = meta.get("description")
    if given:
        return str(given)
    first = next((line for line in body.split("\n") if _js_trim(line)), "")
    cut, longer = _utf16_cut(first, DESCRIPTION_CHARS)
    return cut + "..." if longer else cut


def parse_template(
    name: str, raw: str, *, source: str = "", path: str = ""
) -> PromptTemplate | None:
    """The template in a file's text (`name`: the file name less ``.md``); None for a
    file pi would skip (front matter it cannot parse)."""
    try:
        meta, body = split_front_matter(raw)
    except ValueError:
        return None
    hint = meta.get("argument-hint")
    return PromptTemplate(
        name=name,
        description=_description(meta, body),
        content=body,
        argument_hint=str(hint) if hint else "",
        source=source,
        path=path,
    )


def is_template_file_name(name: str) -> bool:
    """A file pi loads from a prompts folder: ``*.md``, not hidden, not node_modules."""
    return name.endswith(".md") and not name.startswith(".") and name != "node_modules"


def first_of_each_name(templates: Iterable[PromptTemplate]) -> list[PromptTemplate]:
    """The templates in order, a later one of a name already seen left out (pi's rule)."""
    seen: set[str] = set()
    kept = []
    for template in templates:
        if template.name not in seen:
            seen.add(template.name)
            kept.append(template)
    return kept
