from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The embedded SQLite database's files at 0600 (piweb/db_files.py).
        from piweb import db_files

        # Search indexing hooks (post_save on Entry): see services/search.py; access_changed
        # on deletes of team shares, links and team memberships: see services/sharing.py.
        from sessions_app.services import search, sharing  # noqa: F401

        db_files.connect()
