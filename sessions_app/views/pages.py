"""Sessions list (search, paging, import, new session) and the session page (the tree).

Thin: they ask services and selectors and render. The session page's panels get their
data from the context builders in selectors/panels/.
"""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import transaction
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from sessions_app.agent.paths import WorkspaceError, user_areas
from sessions_app.models import Session
from sessions_app.selectors.panels.head import context_gauge, head_context
from sessions_app.selectors.panels.page import session_page_context
from sessions_app.selectors.panels.tree import entry_context, tree_state
from sessions_app.selectors.provenance import session_provenance
from sessions_app.selectors.sessions import SORTS, ListFilters, list_choices, visible_list
from sessions_app.services import sessions as sessions_service
from sessions_app.services import workspaces
from sessions_app.services.access import VIEWER, check_access
from sessions_app.services.llm import model_profiles

PAGE_SIZE = 50
MAX_UPLOAD_BYTES = 512 * 1024 * 1024


def _table_context(request) -> dict:
    """What the sessions table and its pager show (`_session_table.html`)."""
    filters = ListFilters.from_params(request.GET)
    sessions = visible_list(request.user, filters)
    page = Paginator(sessions, PAGE_SIZE).get_page(request.GET.get("page"))
    sort_links = {}
    for name in SORTS:
        # A click sorts by the column, highest first; a second click flips it.
        flipped = name if filters.sort == f"-{name}" else f"-{name}"
        sort_links[name] = {
            "url": "?" + urlencode(filters.as_params(sort=flipped)),
            "state": "desc"
            if filters.sort == f"-{name}"
            else "asc"
            if filters.sort == name
            else "",
        }
    return {
        "page": page,
        "filters": filters,
        "query": filters.query,
        "source": filters.source,
        "page_query": urlencode(filters.as_params()),
        "sort_links": sort_links,
    }


def _list_context(request, **extra) -> dict:
    projects, models = list_choices(request.user)
    return {
        **_table_context(request),
        "projects": projects,
        "models": models,
        "sources": Session.Source.choices,
        "profiles": sorted(model_profiles()),
        # The user's own folders of the workspace roots: new sessions must live inside one.
        "workspace_roots": [
            str(p) for p in user_areas(settings.PIWEB_WORKSPACE_ROOTS, str(request.user.pk))
        ],
        **extra,
    }


@login_required
def session_list(request):
    return render(request, "sessions_app/session_list.html", _list_context(request))


@login_required
def session_table(request):
    """The list's table and pager alone, for the same query: what an open list fetches
    when its websocket says sessions changed."""
    return render(request, "sessions_app/_session_table.html", _table_context(request))


@login_required
@require_POST
def import_session(request):
    """Upload a pi JSONL file; show the importer's report (skipped lines, warnings)."""
    from sessions_app.services.importer import SessionImportError, import_jsonl_stream

    upload = request.FILES.get("file")
    context = {}
    if upload is None:
        context["import_error"] = "Choose a .jsonl file to import."
    elif upload.size > MAX_UPLOAD_BYTES:
        context["import_error"] = "That file is too large to import here."
    else:
        try:
            report = import_jsonl_stream(
                upload.file, request.user, filename=upload.name, after_commit="worker"
            )
        except SessionImportError as exc:
            context["import_error"] = str(exc)
        else:
            context["import_report"] = report
    status = 400 if "import_error" in context else 200
    template = (
        "sessions_app/_import_result.html" if request.htmx else "sessions_app/session_list.html"
    )
    if not request.htmx:
        context = _list_context(request, **context)
    return render(request, template, context, status=status)


@login_required
@require_POST
def new_session(request):
    cwd = request.POST.get("cwd", "").strip()
    name = request.POST.get("name", "").strip()[:500]
    profile = request.POST.get("model_profile", "").strip()
    problem = None if cwd else "Give the working directory for the session."
    if profile and profile not in model_profiles():
        problem = problem or f"Unknown model profile {profile!r}."
    real_cwd = ""
    if not problem:
        # Inside the user's own folder of a workspace root (created on demand), never
        # another user's: the same rule chat and the worker apply before running tools.
        workspaces.user_workspace(request.user)
        try:
            real_cwd = workspaces.check_session_cwd(cwd, request.user, create=True)
        except WorkspaceError as exc:
            problem = str(exc)
    if problem:
        context = _list_context(request, new_error=problem, new_values=request.POST)
        return render(request, "sessions_app/session_list.html", context, status=400)
    with transaction.atomic():
        session = sessions_service.create_session(
            owner=request.user, cwd=real_cwd, name=name, model_profile=profile
        )
        if name:
            sessions_service.rename_session(session, name, actor=request.user)
    messages.success(request, "Session created.")
    return redirect("sessions_app:session_detail", session_id=session.pi_id)


@login_required
def session_detail(request, session_id):
    """The session page: every panel from its own context builder (selectors/panels/)."""
    access = check_access(request.user, session_id, VIEWER)
    context = session_page_context(access, tree_state(request.GET))
    context["gauge"] = context_gauge(access.session)  # (usage: in the page context)
    entry = context.pop("entry", None)
    if entry is not None:
        context["entry_html"] = render_to_string(
            "sessions_app/tree/_entry.html",
            entry_context(access, entry, context["view_leaf"]),
            request=request,
        )
    return render(request, "sessions_app/session_detail.html", context)


@login_required
def provenance_panel(request, session_id):
    """The provenance line alone (the page refreshes it as a followed file grows)."""
    access = check_access(request.user, session_id, VIEWER)
    context = {"session": access.session, "provenance": session_provenance(access.session)}
    return render(request, "sessions_app/_provenance.html", context)


@login_required
def session_stats(request, session_id):
    """The live part of the session header alone: entries, cost, tokens, context gauge
    (the page fetches it again after every websocket event that may change it)."""
    access = check_access(request.user, session_id, VIEWER)
    context = {"session": access.session, **head_context(access.session)}
    return render(request, "sessions_app/head/_stats.html", context)
