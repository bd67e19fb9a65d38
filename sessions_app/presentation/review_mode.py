"""Reviewer mode's item, rendered: the answer, what came before it (shown collapsed), and
the team's score controls with this reviewer's scores (docs/scores.md)."""

from __future__ import annotations

from sessions_app.core import scores as values
from sessions_app.models import ReviewItem, ReviewQueue
from sessions_app.rendering import render_entry
from sessions_app.selectors.paths import load_path
from sessions_app.selectors.review_queues import item_scores

CONTEXT_ENTRIES = 40  # what came before the answer: at most this many, newest last


def item_page(queue: ReviewQueue, item: ReviewItem, user) -> dict:
    path = load_path(item.session, item.entry.pi_id)
    before = [
        {"id": p.get("id"), "type": p.get("type"), "parts": render_entry(p)}
        for p in path[:-1][-CONTEXT_ENTRIES:]
    ]
    configs = item_scores(queue, item, user)
    for config in configs:
        config.keys = values.key_choices(
            config.kind, config.min_value, config.max_value, config.categories
        )
    return {
        "item": item,
        "answer": render_entry(item.entry.payload),
        "before": before,
        "earlier": max(0, len(path) - 1 - CONTEXT_ENTRIES),
        "configs": configs,
        # number keys score the first config this reviewer has not scored yet
        "active": next((c for c in configs if c.given is None), configs[0] if configs else None),
    }
