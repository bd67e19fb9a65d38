from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Search indexing hooks (post_save on Entry): see services/search.py.
        from sessions_app.services import search  # noqa: F401
        # access_changed on deletes of shares, links, team memberships: services/sharing.py.
        from sessions_app.services import sharing  # noqa: F401
