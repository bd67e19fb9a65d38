"""The embedded database's files belong to the service account alone (mode 0600).

SQLite creates a database file with the process's umask (0644 under the usual 022), and
its write-ahead log and shared-memory files with the database file's mode: every local
user could read every session. On each new connection to a SQLite file, the database and
its -wal and -shm files are set to 0600 (a no-op once they are). The var folder itself is
0700 (settings).
"""

from __future__ import annotations

import os
import stat

PRIVATE = 0o600


def make_private(path: str) -> None:
    """Set the SQLite database at `path` and its -wal/-shm files to 0600."""
    for name in (path, f"{path}-wal", f"{path}-shm"):
        try:
            mode = os.stat(name).st_mode
        except OSError:
            continue
        if stat.S_IMODE(mode) & 0o077:
            os.chmod(name, stat.S_IMODE(mode) & PRIVATE)


def on_connection_created(sender, connection, **kwargs) -> None:
    if connection.vendor != "sqlite":
        return
    name = str(connection.settings_dict.get("NAME") or "")
    if not name or name == ":memory:" or name.startswith("file:"):
        return
    make_private(name)


def connect() -> None:
    from django.db.backends.signals import connection_created

    connection_created.connect(on_connection_created, dispatch_uid="piweb-private-sqlite")
