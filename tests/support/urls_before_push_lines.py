"""piweb's URLs as a server before `files/push.jsonl` had them (the sync client's
fallback to the JSON `files/push` is tested against it)."""

from django.urls import include, path

from piweb import urls as piweb_urls
from sessions_app import urls as app_urls

sessions_app_patterns = (
    [p for p in app_urls.urlpatterns if getattr(p, "name", None) != "api_push_lines"],
    app_urls.app_name,
)
urlpatterns = [
    *[p for p in piweb_urls.urlpatterns if str(p.pattern) != ""],
    path("", include(sessions_app_patterns)),
]
handler404 = piweb_urls.handler404
