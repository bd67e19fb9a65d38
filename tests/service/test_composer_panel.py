"""The chat box's configuration (selectors/panels/composer.py): one list of commands,
filtered by the user's rights, and whether the model takes images."""

from types import SimpleNamespace

from sessions_app.presentation.exports import FORMATS
from sessions_app.selectors.panels.composer import (
    EXPORT_FORMATS,
    SLASH_COMMANDS,
    composer_context,
)

VISION = {"provider": "p", "id": "eyes", "input": ["text", "image"]}
TEXT_ONLY = {"provider": "p", "id": "words", "input": ["text"]}


def names(context):
    return [c["name"] for c in context["config"]["commands"]]


def test_the_owner_gets_every_command_an_editor_all_but_share():
    owner = composer_context(SimpleNamespace(is_owner=True), {"model": VISION})
    editor = composer_context(SimpleNamespace(is_owner=False), {"model": VISION})
    expected = ["model", "thinking", "compact", "name", "fork", "tree", "export", "share"]
    assert names(owner) == [c.name for c in SLASH_COMMANDS] == [*expected, "copy", "new"]
    assert names(editor) == [n for n in names(owner) if n != "share"]


def test_images_follow_the_models_input(settings):
    settings.PIWEB_CHAT_IMAGE_MAX_COUNT = 3
    seeing = composer_context(SimpleNamespace(is_owner=True), {"model": VISION})["config"]
    assert seeing["images"]["allowed"] and seeing["images"]["maxCount"] == 3
    blind = composer_context(SimpleNamespace(is_owner=True), {"model": TEXT_ONLY})["config"]
    assert not blind["images"]["allowed"]
    assert blind["images"]["reason"] == "p/words does not take images."
    none = composer_context(SimpleNamespace(is_owner=True), {"model": None})["config"]
    assert not none["images"]["allowed"]


def test_the_export_formats_are_the_exporters():
    assert sorted(EXPORT_FORMATS) == sorted(FORMATS) and EXPORT_FORMATS[0] == "html"


def test_templates_and_skills_follow_piwebs_commands_and_a_clash_is_named():
    from sessions_app.core.prompt_templates import PromptTemplate
    from sessions_app.core.skills import Skill
    from sessions_app.selectors.prompt_templates import SlashChoices

    choices = SlashChoices(
        templates=[PromptTemplate("review", "Review a file", "Review $1", "<file>", "project")],
        skills=[Skill("deploy", "Deploy the app.", "/w/.pi/skills/deploy/SKILL.md", "/w")],
        shadowed=["model"],
    )
    config = composer_context(SimpleNamespace(is_owner=True), {"model": VISION}, choices)["config"]
    commands = config["commands"]
    assert [c["name"] for c in commands] == [c.name for c in SLASH_COMMANDS] + [
        "review",
        "skill:deploy",
    ]
    review, deploy = commands[-2:]
    assert (review["argument"], review["description"], review["sends"]) == (
        "<file>",
        "Review a file",
        True,
    )
    assert deploy["sends"] and deploy["description"] == "Deploy the app."
    model = next(c for c in commands if c["name"] == "model")
    assert "your template /model is not used" in model["description"]
    assert not any(c.get("sends") for c in commands[: len(SLASH_COMMANDS)])
