"""templatetags/activity_tags.py: the activity log reads in words, never as stored verbs."""

import pytest
from django.template import Context, Template

from sessions_app.templatetags.activity_tags import WORDS, activity_words

pytestmark = [pytest.mark.embedded]


@pytest.mark.parametrize(
    ("verb", "words"),
    [
        ("chat_sent", "sent a message"),
        ("compaction_requested", "asked for a compaction"),
        ("resolved comment", "resolved comment"),
        ("some_new_verb", "some new verb"),
        (None, ""),
    ],
)
def test_verbs_in_words(verb, words):
    assert activity_words(verb) == words


def test_no_listed_verb_shows_an_underscore_and_the_template_uses_the_filter():
    assert not [w for w in WORDS.values() if "_" in w]
    html = Template("{% load activity_tags %}{{ v|activity_words }}").render(
        Context({"v": "chat_stopped"})
    )
    assert html == "stopped the agent"
