from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The embedded SQLite database's files at 0600 (piweb/db_files.py).
        from piweb import db_files

        # access_changed on deletes of team shares, links and team memberships: see
        # services/sharing.py.
        # The job kinds register themselves when their modules are imported, and so do
        # the subscribers to the entry-written event (services/entry_written.py): search,
        # usage, the live events and the write-back job. Importing them here gives every
        # process all of them before it writes.
        from sessions_app.services import events, search, sharing, sync, usage  # noqa: F401
        from sessions_app.services.jobs import (  # noqa: F401
            agent_run,
            branch_summary,
            compaction,
            compare_summary,
            search_index,
            session_import,
            snapshot_gc,
            workspace_measure,
            write_back,
        )

        db_files.connect()
