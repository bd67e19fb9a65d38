"""Sessions list and session page (the tree). Thin: they ask services and render."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.shortcuts import render
from django.urls import path

from sessions_app.services.access import check_access, visible_sessions


@login_required
def session_list(request):
    sessions = visible_sessions(request.user).select_related("owner").order_by("-modified_at")
    query = request.GET.get("q", "").strip()
    if query:
        sessions = sessions.filter(
            Q(name__icontains=query) | Q(first_message__icontains=query) | Q(cwd__icontains=query)
        )
    page = Paginator(sessions, 50).get_page(request.GET.get("page"))
    return render(request, "sessions_app/session_list.html", {"page": page, "query": query})


@login_required
def session_detail(request, session_id):
    access = check_access(request.user, session_id)
    return render(
        request, "sessions_app/session_detail.html", {"access": access, "session": access.session}
    )


urlpatterns = [
    path("", session_list, name="session_list"),
    path("s/<str:session_id>/", session_detail, name="session_detail"),
]
