"""Files shipped with piweb's code, read by name: the static files (icons, the export's
style sheets), the model catalog and the sync client.

A name is relative to piweb's code folder and must lie in one of ``SHIPPED``, none of
which holds a user's folder, so this is no way into a workspace: one ``open`` here
replaces a file read in each module that needs one of piweb's own files (the file
access allow-list, ``tests/unit/test_file_access.py``)."""

from __future__ import annotations

from pathlib import Path

CODE_DIR = Path(__file__).resolve().parents[2]
SHIPPED = ("static/", "sessions_app/data/", "piweb_sync.py")


def read_shipped(name: str) -> bytes:
    """The bytes of ``name`` (e.g. ``static/piweb/tokens.css``); ValueError for a name
    outside the shipped folders, OSError when it is not there."""
    parts = name.split("/")
    if (
        name.startswith("/")
        or ".." in parts
        or "" in parts[:-1]
        or not any(name == top or top.endswith("/") and name.startswith(top) for top in SHIPPED)
    ):
        raise ValueError(f"not a file shipped with piweb: {name!r}")
    with open(CODE_DIR / name, "rb") as fh:
        return fh.read()
