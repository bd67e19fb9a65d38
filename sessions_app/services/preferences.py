"""Changes to a user's display preferences (the colour theme); read by
`selectors/preferences.py`."""

from __future__ import annotations

from django.db import transaction

from sessions_app.core.errors import ServiceError
from sessions_app.models import DisplayPreference


class PreferenceError(ServiceError):
    """A preference that cannot be stored (message safe to show)."""

    code = "preference"


def set_theme(user, theme: str) -> DisplayPreference:
    """Store the user's theme: "system" (follow the browser), "light" or "dark"."""
    if theme not in DisplayPreference.Theme.values:
        raise PreferenceError(f"Unknown theme: {theme or '(none)'}. Pick system, light or dark.")
    with transaction.atomic():
        pref, _ = DisplayPreference.objects.select_for_update().get_or_create(user=user)
        pref.theme = theme
        pref.save(update_fields=["theme", "updated_at"])
    return pref
