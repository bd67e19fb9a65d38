"""Reads about single entries that pages need without loading their payloads."""

from __future__ import annotations

from django.db.models.functions import Length

from sessions_app.models import Entry, Session


def line_lengths(session: Session, pi_ids) -> dict[str, int]:
    """Characters of each entry's stored line, by pi id (one query, no payloads)."""
    rows = (
        Entry.objects.filter(session=session, pi_id__in=[i for i in pi_ids if i])
        .annotate(chars=Length("line"))
        .values_list("pi_id", "chars")
    )
    return dict(rows)
