"""The activity log in words: `{{ item|activity_words }}` turns a stored verb
(`chat_sent`, `compaction_requested`, …, services/*) into what a person reads."""

from django import template

register = template.Library()

# The verbs the services record (services/sessions.record_activity), in words. A verb not
# listed reads with its underscores as spaces.
WORDS = {
    "created": "created the session",
    "imported": "imported the session",
    "exported": "exported",
    "navigated": "moved the active leaf to",
    "labelled": "labelled",
    "renamed": "renamed the session",
    "pinned": "pinned or unpinned the session",
    "archived": "archived or restored the session",
    "tagged": "changed the tags",
    "forked": "forked a new session from",
    "forked_from": "was forked from another session at",
    "shared": "shared the session",
    "unshared": "stopped sharing the session",
    "commented": "commented on",
    "chat_sent": "sent a message",
    "chat_queued": "queued a message",
    "chat_unqueued": "took back a queued message",
    "chat_stopped": "stopped the agent",
    "model_changed": "changed the model",
    "thinking_changed": "changed the thinking level",
    "compaction_requested": "asked for a compaction",
    "compaction_settings": "changed the compaction settings",
    "branch_summary_requested": "asked for a branch summary",
    "compare_requested": "asked for a branch comparison",
    "workspace_chosen": "chose where the session works",
    "write_back_on": "turned writing back to pi's file on",
    "write_back_off": "turned writing back to pi's file off",
    "worker_ping": "checked the worker",
}


@register.filter
def activity_words(verb) -> str:
    verb = str(verb or "")
    return WORDS.get(verb, verb.replace("_", " "))
