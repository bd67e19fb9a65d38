from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The embedded SQLite database's files at 0600 (piweb/db_files.py).
        from piweb import db_files

        # access_changed on deletes of team shares, links and team memberships: see
        # services/sharing.py. (Search indexing is no signal: writers call it.)
        from sessions_app.services import sharing  # noqa: F401

        db_files.connect()
