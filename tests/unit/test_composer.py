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
