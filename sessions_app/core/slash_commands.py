"""piweb's own slash commands: the one list the chat box completes and runs
(`selectors/panels/composer.py` hands it to static/piweb/composer.js) and the names a
prompt template cannot take over (`selectors/prompt_templates.py`: piweb's own win)."""

from __future__ import annotations

from dataclasses import dataclass


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

COMMAND_NAMES = frozenset(c.name for c in SLASH_COMMANDS)
