"""A user's own prompt templates kept in piweb (the Templates page): save, delete, import.

Each is the text of a pi template file (``<name>.md``, front matter included); the
selectors read it back as pi reads a file (`selectors/prompt_templates.py`). A name is a
file name pi would load and a command the chat box can type: no whitespace, no ``/``,
not hidden, not one of piweb's own commands.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from django.db import transaction

from sessions_app.core.errors import ServiceError
from sessions_app.core.prompt_templates import parse_template
from sessions_app.core.slash_commands import COMMAND_NAMES
from sessions_app.models import PromptTemplate
from sessions_app.selectors.prompt_templates import MAX_TEMPLATE_BYTES, stored_template_count

MAX_NAME_CHARS = 100
MAX_TEMPLATES = 500  # per user
MAX_IMPORT_FILES = 500


class TemplateError(ServiceError):
    code = "template"


def check_name(name: str) -> str:
    """The name, or a TemplateError saying why it cannot be one."""
    name = (name or "").strip()
    if name.endswith(".md"):
        name = name[:-3]
    if not name:
        raise TemplateError("Give the template a name: you call it as /name.")
    if len(name) > MAX_NAME_CHARS:
        raise TemplateError(f"A template name has at most {MAX_NAME_CHARS} characters.")
    if any(c.isspace() or c in "/\\\0" for c in name) or name.startswith("."):
        raise TemplateError(
            f"{name!r} cannot be a template name: no spaces or slashes, and not starting with a dot."
        )
    if name in COMMAND_NAMES or name.startswith("skill:"):
        raise TemplateError(f"/{name} is piweb's own command: choose another name.")
    return name


def check_text(name: str, text: str) -> str:
    text = text or ""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_TEMPLATE_BYTES:
        raise TemplateError(f"/{name} is over {MAX_TEMPLATE_BYTES // 1024} KB.")
    if "\0" in text:
        raise TemplateError(f"/{name} holds a NUL character.")
    if parse_template(name, text) is None:
        raise TemplateError(f"/{name}: its front matter is not valid YAML (pi would skip it).")
    return text


def _check_room(user, adding: int) -> None:
    if stored_template_count(user) + adding > MAX_TEMPLATES:
        raise TemplateError(f"You can keep at most {MAX_TEMPLATES} templates.")


def save_template(user, name: str, text: str, *, replacing: str = "") -> PromptTemplate:
    """Create or change the user's template `name` (`replacing`: its old name when
    renamed; a rename onto another template's name is refused)."""
    name = check_name(name)
    text = check_text(name, text)
    with transaction.atomic():
        mine = PromptTemplate.objects.select_for_update().filter(user=user)
        if replacing and replacing != name:
            if mine.filter(name=name).exists():
                raise TemplateError(f"You already have a template /{name}.", status=409)
            renamed = mine.filter(name=replacing).update(name=name, text=text)
            if renamed:
                return mine.get(name=name)
        existing = mine.filter(name=name).first()
        if existing is None:
            _check_room(user, 1)
            return PromptTemplate.objects.create(user=user, name=name, text=text)
        existing.text = text
        existing.save(update_fields=["text", "updated_at"])
        return existing


def delete_template(user, name: str) -> None:
    deleted, _ = PromptTemplate.objects.filter(user=user, name=name).delete()
    if not deleted:
        raise TemplateError(f"You have no template /{name}.", status=404)


@dataclass
class ImportReport:
    saved: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, why)


def import_templates(user, files: list[tuple[str, bytes]]) -> ImportReport:
    """Save each ``.md`` file of a folder (file name, bytes) as a template, as pi would
    load that folder: other files and dot-files are skipped with the reason; a template
    of the same name is replaced. One transaction."""
    if len(files) > MAX_IMPORT_FILES:
        raise TemplateError(f"Import at most {MAX_IMPORT_FILES} files at a time.")
    report = ImportReport()
    checked: dict[str, str] = {}
    for raw_name, data in files:
        base = os.path.basename((raw_name or "").replace("\\", "/"))
        if not base.endswith(".md") or base.startswith("."):
            report.skipped.append((base, "not a template (.md, not hidden)"))
            continue
        try:
            text = data.decode("utf-8")
            name = check_name(base)
            checked[name] = check_text(name, text)
        except UnicodeDecodeError:
            report.skipped.append((base, "not UTF-8 text"))
        except TemplateError as exc:
            report.skipped.append((base, str(exc)))
    with transaction.atomic():
        mine = PromptTemplate.objects.select_for_update().filter(user=user)
        existing = set(mine.filter(name__in=list(checked)).values_list("name", flat=True))
        _check_room(user, len(set(checked) - existing))
        for name, text in checked.items():
            PromptTemplate.objects.update_or_create(user=user, name=name, defaults={"text": text})
            report.saved.append(name)
    return report
