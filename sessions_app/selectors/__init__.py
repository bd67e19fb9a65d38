"""Reads: queries the views and commands ask, kept apart from the writes in services/."""
