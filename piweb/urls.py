from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Browsers probe /favicon.ico on pages without an icon link (the share and export pages,
    # a JSON response opened in a tab): send them to the one icon.
    path(
        "favicon.ico",
        RedirectView.as_view(url=static("piweb/favicon.svg"), permanent=True),
        name="favicon",
    ),
    path("", include("sessions_app.urls")),
]

# An htmx request that hits a 403 or 404 gets the notice partial (htmx swaps 4xx).
handler403 = "sessions_app.views.errors.forbidden"
handler404 = "sessions_app.views.errors.not_found"
