"""A user's display preferences (the colour theme), read for every page's `<html>`."""

from __future__ import annotations

from sessions_app.models import DisplayPreference


def theme_for(user) -> str:
    """The user's theme ("system", "light" or "dark"); "system" for anyone not logged in
    or who never chose."""
    if not getattr(user, "is_authenticated", False):
        return DisplayPreference.Theme.SYSTEM
    theme = DisplayPreference.objects.filter(user=user).values_list("theme", flat=True).first()
    return theme or DisplayPreference.Theme.SYSTEM
