"""piweb/db_files.py: the embedded database's files are the service account's alone."""

from __future__ import annotations

import os
import stat


def test_a_sqlite_database_piweb_opens_is_the_service_accounts_alone(tmp_path, django_db_blocker):
    """As the embedded default opens var/piweb.sqlite3 (WAL mode), under the usual umask."""
    from django.db.utils import ConnectionHandler

    path = tmp_path / "piweb.sqlite3"
    options = {"init_command": "PRAGMA journal_mode=WAL;"}
    handler = ConnectionHandler(  # (its own handler: "default" here is this file)
        {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path), "OPTIONS": options}}
    )
    handler.settings  # noqa: B018 (fills in the defaults)
    old = os.umask(0o022)
    try:
        conn = handler["default"]
        with django_db_blocker.unblock(), conn.cursor() as cursor:
            cursor.execute("CREATE TABLE t (a)")
            cursor.execute("INSERT INTO t VALUES (1)")
        files = [p for p in (path, tmp_path / "piweb.sqlite3-wal", tmp_path / "piweb.sqlite3-shm")]
        assert path.exists()
        for name in files:
            if name.exists():
                mode = stat.S_IMODE(name.stat().st_mode)
                assert mode & 0o077 == 0, f"{name.name} is {oct(mode)}"
        conn.close()
    finally:
        os.umask(old)
