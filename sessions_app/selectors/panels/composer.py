"""The chat box (static/piweb/composer.js): its slash commands and what it may attach.

`SLASH_COMMANDS` is the one list of the commands: the page renders it as JSON
(`json_script`) and composer.js completes and runs what it names, each through the
endpoint the rest of the page uses for that action. A message that starts with `/` but
names no command is sent to the model as text, as pi sends it, once the user has
confirmed it (composer.js).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from django.conf import settings

from sessions_app.core.images import takes_images

EXPORT_FORMATS = ("html", "md", "jsonl")  # presentation/exports.FORMATS, HTML first as pi


@dataclass(frozen=True)
class SlashCommand:
    name: str
    description: str
    argument: str = ""  # the argument's hint, shown in the completion list
    completes: str = ""  # what the argument completes from: models, thinking, formats
    argument_required: bool = False
    owner_only: bool = False


SLASH_COMMANDS = (
    SlashCommand("model", "Switch the model", "<provider/model>", "models", True),
    SlashCommand("thinking", "Set the thinking level", "<level>", "thinking", True),
    SlashCommand("compact", "Compact the context now", "[instructions]"),
    SlashCommand("name", "Rename the session", "<name>", argument_required=True),
    SlashCommand("fork", "Fork the session at the end of this branch"),
    SlashCommand("tree", "Go to the session tree"),
    SlashCommand(
        "export", "Download this branch (HTML, Markdown or pi JSONL)", "[format]", "formats"
    ),
    SlashCommand("share", "Share the session", owner_only=True),
    SlashCommand("copy", "Copy the last answer"),
    SlashCommand("new", "Start a new session in this workspace"),
)


def composer_context(access, models: dict) -> dict:
    """`chat.composer`: the commands this user may run, the export formats, and whether
    the model at the leaf takes images (with the limits the server applies)."""
    commands = [asdict(c) for c in SLASH_COMMANDS if access.is_owner or not c.owner_only]
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
