"""The prompt templates and skills a user's message may call in a session, read as pi 0.80.2
reads them at run time (its package manager ranks project resources before the user's).

In order, the first template of a name winning:

1. the project's ``.pi/prompts/`` in the session's working directory at the leaf, only
   when that folder passes the check the system prompt uses
   (`workspaces.check_session_cwd`) and lies in the area of the user who sends (pi loads a
   project's resources only for a project its user trusts). Every file is opened through
   `safefs` beneath the working directory: a template that is a symlink leading out of it
   is not read;
2. the user's own templates stored in piweb (the Templates page);
3. the shared ones in the ``prompts/`` folder of pi's agent folder
   (``PIWEB_PI_AGENT_DIR``, where piweb reads pi's models.json: the server's own folder).

In a folder, as in pi: ``*.md`` files only, no dot-files, no ``node_modules``, nothing its
``.gitignore``/``.ignore``/``.fdignore`` lists. A name that is one of piweb's own slash
commands stays piweb's (`core.slash_commands`).

The skills are those the system prompt draws from (`model_input.skill_roots` of the
checked working directory; the agent folder's alone when the folder is refused or not
the user's); a skill file is read through `safefs` beneath the working directory or
beneath the agent skills folder, the two places the agent's read tool may open.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pathspec
from django.conf import settings

from sessions_app.agent import safefs
from sessions_app.agent.paths import is_within
from sessions_app.agent.safefs import BeneathFiles
from sessions_app.core.prompt_templates import (
    PromptTemplate,
    expand_message,
    first_of_each_name,
    is_template_file_name,
    parse_template,
)
from sessions_app.core.skills import Skill, load_skills
from sessions_app.core.slash_commands import COMMAND_NAMES
from sessions_app.models import PromptTemplate as StoredTemplate
from sessions_app.selectors import paths, workspaces
from sessions_app.selectors.model_input import skill_roots
from sessions_app.selectors.workspaces import project_dir

PROJECT_PROMPTS = os.path.join(".pi", "prompts")
IGNORE_FILES = (".gitignore", ".ignore", ".fdignore")
MAX_TEMPLATE_BYTES = 256 * 1024  # a template larger than a message could be is not read
MAX_TEMPLATES_PER_FOLDER = 500
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY  # (a FIFO must not block)


@dataclass(frozen=True)
class SlashChoices:
    """What a user's message may call in a session: templates and skills, in pi's order."""

    templates: list[PromptTemplate] = field(default_factory=list)
    skills: list[Skill] = field(default_factory=list)
    project_dir: str | None = None  # the checked working directory, when the user's
    shadowed: list[str] = field(default_factory=list)  # names piweb's own commands keep


# --------------------------------------------------------------------------- reading


def _read_beneath(root: str, root_fd: int, rel: str) -> str | None:
    """The text of the regular file `rel` beneath `root` (safefs), or None."""
    try:
        fd = safefs.open_beneath_real(root, root_fd, rel, _READ_FLAGS)
    except OSError:
        return None
    try:
        if not safefs.is_regular(fd) or os.fstat(fd).st_size > MAX_TEMPLATE_BYTES:
            return None
        return os.read(fd, MAX_TEMPLATE_BYTES + 1)[:MAX_TEMPLATE_BYTES].decode("utf-8", "replace")
    finally:
        os.close(fd)


def read_file_beneath(root: str, rel: str) -> str | None:
    """The text of the file `rel` (relative) beneath the real directory `root`; None
    when it cannot be read, or leads outside."""
    try:
        root_fd = safefs.open_root(root)
    except OSError:
        return None
    try:
        return _read_beneath(root, root_fd, rel)
    finally:
        os.close(root_fd)


def _ignored(root: str, root_fd: int, folder: str) -> pathspec.PathSpec:
    lines: list[str] = []
    for name in IGNORE_FILES:
        text = _read_beneath(root, root_fd, os.path.join(folder, name))
        if text:
            lines += text.splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _folder_templates(root: str, folder: str, source: str) -> list[PromptTemplate]:
    """The templates in `folder` (relative to the real directory `root`), each file
    opened beneath `root`: a symlink that leads out of it is not followed."""
    try:
        root_fd = safefs.open_root(root)
    except OSError:
        return []
    try:
        try:
            dir_fd = safefs.open_beneath_real(root, root_fd, folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return []
        try:
            names = sorted(safefs.names_in(dir_fd))
        finally:
            os.close(dir_fd)
        ignored = _ignored(root, root_fd, folder)
        found = []
        for name in names:
            if not is_template_file_name(name) or ignored.match_file(name):
                continue
            text = _read_beneath(root, root_fd, os.path.join(folder, name))
            template = (
                None
                if text is None
                else parse_template(
                    name[:-3], text, source=source, path=os.path.join(root, folder, name)
                )
            )
            if template is not None:
                found.append(template)
            if len(found) >= MAX_TEMPLATES_PER_FOLDER:
                break
        return found
    finally:
        os.close(root_fd)


def project_templates(cwd: str) -> list[PromptTemplate]:
    return _folder_templates(cwd, PROJECT_PROMPTS, "project")


def stored_templates(user) -> list[PromptTemplate]:
    """The user's own templates kept in piweb, by name."""
    found = []
    for row in StoredTemplate.objects.filter(user=user).order_by("name"):
        template = parse_template(row.name, row.text, source="yours")
        if template is not None:
            found.append(template)
    return found


def agent_templates() -> list[PromptTemplate]:
    """The shared templates of pi's agent folder (``PIWEB_PI_AGENT_DIR/prompts``)."""
    base = settings.PIWEB_PI_AGENT_DIR
    if not base:
        return []
    folder = os.path.realpath(os.path.join(os.path.expanduser(str(base)), "prompts"))
    return _folder_templates(folder, ".", "shared")


def user_templates(user) -> list[PromptTemplate]:
    """The templates a user has wherever they work: their own, then the shared ones."""
    return first_of_each_name([*stored_templates(user), *agent_templates()])


# --------------------------------------------------------------------------- skills


def session_skills(cwd: str | None) -> list[Skill]:
    """The skills of the system prompt's roots for `cwd` (the agent folder's alone when
    None), read through safefs beneath those folders as the system prompt reads them."""
    agent_dir = workspaces.agent_dir()
    files = BeneathFiles([agent_dir, *([cwd] if cwd else [])])
    return load_skills(skill_roots(cwd, agent_dir, files), files=files).skills


def read_skill(skill: Skill, cwd: str | None) -> str | None:
    """A skill file's text, opened beneath the working directory or the agent skills
    folder (whichever holds it); None otherwise."""
    path = os.path.normpath(skill.file_path)
    agent = workspaces.agent_skills_dir()
    beneath = [(cwd, cwd)] if cwd else []
    beneath.append((os.path.normpath(agent), os.path.realpath(agent)))
    for named, real in beneath:
        if is_within(path, named):
            return read_file_beneath(real, os.path.relpath(path, named))
    return None


# --------------------------------------------------------------------------- the answer


def slash_choices(session, user, leaf=paths.UNSET) -> SlashChoices:
    """The templates and skills `user` may call in `session` at `leaf`."""
    cwd = project_dir(session, user, leaf)
    project = project_templates(cwd) if cwd else []
    templates = first_of_each_name([*project, *user_templates(user)])
    return SlashChoices(
        templates=[t for t in templates if t.name not in COMMAND_NAMES],
        skills=session_skills(cwd),
        project_dir=cwd,
        shadowed=sorted({t.name for t in templates} & COMMAND_NAMES),
    )


def expanded_text(session, user, text: str, leaf=paths.UNSET) -> str:
    """`text` as pi would send it: a ``/skill:`` command or a template expanded."""
    if not text.startswith("/"):
        return text
    choices = slash_choices(session, user, leaf)
    return expand_message(
        text, choices.templates, choices.skills, lambda s: read_skill(s, choices.project_dir)
    )


def templates_page(user) -> dict:
    """The Templates page: the user's own templates (with their text, for editing) and
    the shared ones of the agent folder, each as pi reads it."""
    rows = []
    for row in StoredTemplate.objects.filter(user=user).order_by("name"):
        parsed = parse_template(row.name, row.text)
        rows.append(
            {
                "name": row.name,
                "text": row.text,
                "description": parsed.description if parsed else "",
                "hint": parsed.argument_hint if parsed else "",
            }
        )
    mine = {row["name"] for row in rows}
    shared = [
        {
            "name": t.name,
            "description": t.description,
            "hint": t.argument_hint,
            "hidden": t.name in mine,
        }
        for t in agent_templates()
    ]
    return {"templates": rows, "shared": shared}


def stored_template_count(user) -> int:
    """How many templates `user` keeps."""
    return StoredTemplate.objects.filter(user=user).count()


def stored_template_text(user, name: str) -> str | None:
    return (
        StoredTemplate.objects.filter(user=user, name=name).values_list("text", flat=True).first()
    )
