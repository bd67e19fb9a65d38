"""URL map: each area of the app keeps its own `urlpatterns` beside its views."""

from sessions_app.views import pages

app_name = "sessions_app"

urlpatterns = [*pages.urlpatterns]
