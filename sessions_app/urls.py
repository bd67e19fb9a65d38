"""URL map: each area of the app keeps its own `urlpatterns` beside its views."""

from sessions_app.views import chat, jobs, pages, review, tree, usage

app_name = "sessions_app"

urlpatterns = [*pages.urlpatterns]
urlpatterns += review.urlpatterns
urlpatterns += chat.urlpatterns
urlpatterns += tree.urlpatterns
urlpatterns += jobs.urlpatterns
urlpatterns += usage.urlpatterns
