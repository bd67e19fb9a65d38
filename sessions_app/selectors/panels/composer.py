"""The chat box (static/piweb/composer.js): its slash commands and what it may attach.

`SLASH_COMMANDS` is the one list of the commands: the page renders it as JSON
(`json_script`) and composer.js completes and runs what it names, each through the
endpoint the rest of the page uses for that action. Beside them come the user's prompt
templates and ``/skill:`` commands (`selectors/prompt_templates.py`), which are sent as
the message and expanded by the server as pi expands them; a template named like one of
piweb's commands is left out, and that command's line says so. A message that starts
with `/` but names nothing listed is sent to the model as text, as pi sends it, once the
user has confirmed it (composer.js).
"""

from __future__ import annotations

from dataclasses import asdict

from django.conf import settings

from sessions_app.core.images import takes_images
from sessions_app.core.slash_commands import SLASH_COMMANDS

EXPORT_FORMATS = ("html", "md", "jsonl")  # presentation/exports.FORMATS, HTML first as pi


def _command(command, shadowed) -> dict:
    item = asdict(command)
    if command.name in shadowed:
        item["description"] += f" (piweb's own: your template /{command.name} is not used)"
    return item


def template_items(choices) -> list[dict]:
    """The templates and skills of `choices` (a `prompt_templates.SlashChoices`) as
    completion items: sent as the message, expanded by the server."""
    items = [
        {
            "name": t.name,
            "description": t.description,
            "argument": t.argument_hint,
            "source": t.source,
            "sends": True,
        }
        for t in choices.templates
    ]
    items += [
        {
            "name": f"skill:{s.name}",
            "description": s.description,
            "argument": "[message]",
            "source": "skill",
            "sends": True,
        }
        for s in choices.skills
    ]
    return items


def composer_context(access, models: dict, choices=None) -> dict:
    """`chat.composer`: the commands this user may run (piweb's, then their templates
    and skills from `choices`), the export formats, and whether the model at the leaf
    takes images (with the limits the server applies)."""
    shadowed = set(choices.shadowed) if choices else set()
    commands = [
        _command(c, shadowed) for c in SLASH_COMMANDS if access.is_owner or not c.owner_only
    ]
    if choices is not None:
        commands += template_items(choices)
    model = models.get("model")
    images = takes_images(model)
    reason = ""
    if not images:
        name = f"{model['provider']}/{model['id']}" if model else "This session's model"
        reason = f"{name} does not take images."
    return {
        "config": {
            "commands": commands,
            "formats": list(EXPORT_FORMATS),
            "images": {
                "allowed": images,
                "reason": reason,
                "maxBytes": settings.PIWEB_CHAT_IMAGE_MAX_BYTES,
                "maxCount": settings.PIWEB_CHAT_IMAGE_MAX_COUNT,
            },
        }
    }
