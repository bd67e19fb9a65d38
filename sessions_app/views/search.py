"""Search across the sessions a person can see."""

from __future__ import annotations

from django.shortcuts import render

from sessions_app.core.errors import ServiceError
from sessions_app.params import query
from sessions_app.responses import piweb_view
from sessions_app.selectors import search as search_selectors


@piweb_view()
def search(request):
    params = query(request)
    text = params.text("q")
    context = {
        "query": text,
        "params": request.GET,
        "roles": search_selectors.ROLE_CHOICES,
        "result": None,
        "error": "",
    }
    status = 200
    try:
        filters = search_selectors.SearchFilters.from_params(request.GET)
        if text.strip() or filters.any():
            page = params.integer("page", 1) or 1
            context["result"] = search_selectors.search(request.user, text, filters, page=page)
    except ServiceError as exc:  # bad filters or page: shown on the page, with the form
        context["error"] = str(exc)
        status = 400
    params = request.GET.copy()
    params.pop("page", None)
    context["base_query"] = params.urlencode()
    template = (
        "sessions_app/search/_search_results.html"
        if request.htmx and params.text("partial") == "1"
        else "sessions_app/search/search.html"
    )
    return render(request, template, context, status=status)
