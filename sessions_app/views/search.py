"""Search across the sessions a person can see."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from sessions_app.params import int_or_none
from sessions_app.services import search as search_service


@login_required
@require_GET
def search(request):
    query = request.GET.get("q", "")
    context = {
        "query": query,
        "params": request.GET,
        "roles": search_service.ROLE_CHOICES,
        "result": None,
        "error": "",
    }
    status = 200
    try:
        filters = search_service.SearchFilters.from_params(request.GET)
        if query.strip() or filters.any():
            context["result"] = search_service.search(
                request.user, query, filters, page=int_or_none(request.GET.get("page")) or 1
            )
    except search_service.SearchError as exc:
        context["error"] = str(exc)
        status = 400
    params = request.GET.copy()
    params.pop("page", None)
    context["base_query"] = params.urlencode()
    template = (
        "sessions_app/search/_search_results.html"
        if request.htmx and request.GET.get("partial") == "1"
        else "sessions_app/search/search.html"
    )
    return render(request, template, context, status=status)
