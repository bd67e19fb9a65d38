"""Sessions list (search, paging, import and its job, new session) and the session page.

Thin: they ask services and selectors and render. The session page's panels get their
data from the context builders in selectors/panels/.
"""

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db import transaction
from django.http import Http404
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from sessions_app.models import Job, Session
from sessions_app.params import form, query
from sessions_app.responses import piweb_view, session_view
from sessions_app.selectors import workspaces
from sessions_app.selectors.jobs import import_job
from sessions_app.selectors.llm.catalog import model_profiles
from sessions_app.selectors.panels.head import context_gauge, head_context
from sessions_app.selectors.panels.page import page_stamp, session_page_context
from sessions_app.selectors.panels.tree import entry_context, tree_state
from sessions_app.selectors.provenance import session_provenance
from sessions_app.selectors.sessions import (
    SORTS,
    ListFilters,
    list_choices,
    visible_list,
    visible_sessions,
)
from sessions_app.selectors.workspaces import WorkspaceError
from sessions_app.services import sessions as sessions_service
from sessions_app.services.jobs.session_import import request_import
from sessions_app.services.workspaces import make_session_cwd, user_workspace
from sessions_app.upload_handlers import ImportUploadHandler, limit_text

PAGE_SIZE = 50


def _table_context(request) -> dict:
    """What the sessions table and its pager show (`_session_table.html`)."""
    filters = ListFilters.from_params(request.GET)
    sessions = visible_list(request.user, filters)
    page = Paginator(sessions, PAGE_SIZE).get_page(query(request).text("page"))
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
        # Nobody's session to show at all (not merely none matching): the first-run state.
        "first_run": not page.paginator.count and not visible_sessions(request.user).exists(),
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
        # Where the user's sessions may live (their own folder of each root, or on a
        # single-user setup the roots themselves): new sessions must live inside one.
        "workspace_roots": [str(p) for p in workspaces.user_areas_of(request.user)],
        # The new session form: a fresh folder by default, or one the user already has.
        "new_folders": workspaces.existing_workspaces(request.user),
        "import_limit": settings.PIWEB_MAX_UPLOAD_BYTES,
        "import_limit_text": limit_text(),
        **extra,
    }


@piweb_view(methods=None)
def session_list(request):
    return render(request, "sessions_app/session_list.html", _list_context(request))


@piweb_view(methods=None)
def session_table(request):
    """The list's table and pager alone, for the same query: what an open list fetches
    when its websocket says sessions changed."""
    return render(request, "sessions_app/_session_table.html", _table_context(request))


# --- importing a session file: the upload, then its import job ---------------------------
# ``import_session`` takes the upload with ``ImportUploadHandler`` (straight to disk, size
# checked as it arrives, refused at PIWEB_MAX_UPLOAD_BYTES without reading the rest) and
# queues an import job (services/jobs/session_import); it answers 202 with the job's
# status partial, which polls ``import_status`` until the job is over and then shows the
# importer's report or its error.


@csrf_exempt  # the handlers must be set before anything reads the body; CSRF is checked below
@piweb_view(methods=("POST",))
def import_session(request):
    handler = ImportUploadHandler(request)
    request.upload_handlers = [handler]
    response = _import_session(request)
    if response.status_code != 202:  # refused (the CSRF check too): no file stays behind
        handler.discard()
    return response


@csrf_protect
def _import_session(request):
    handler = request.upload_handlers[0]
    upload = request.FILES.get("file")
    if handler.too_large:
        return _import_answer(
            request,
            {"import_error": f"That file is larger than the import limit ({limit_text()})."},
        )
    if upload is None:
        return _import_answer(request, {"import_error": "Choose a .jsonl file to import."})
    job = request_import(request.user, upload.path, upload.name, upload.size)
    response = _import_answer(request, _import_job_context(job), status=202)
    response["Location"] = reverse("sessions_app:import_status", args=[job.pk])
    return response


@piweb_view()
def import_status(request, job_id):
    """Where an import job stands (the partial polls itself until the job is over)."""
    job = import_job(request.user, job_id)
    if job is None:
        raise Http404("No such import.")
    context = _import_job_context(job)
    status = 400 if job.status in (Job.Status.FAILED, Job.Status.CANCELLED) else 200
    return _import_answer(request, context, status=status)


def _import_job_context(job: Job) -> dict:
    progress = job.progress or {}
    done, total = progress.get("done") or 0, progress.get("total") or 0
    context = {
        "import_job": job,
        "import_progress": progress,
        "import_percent": min(100, int(100 * done / total)) if total else 0,
    }
    if job.status == Job.Status.DONE:
        context["import_report"] = progress.get("report") or {}
    elif job.status in (Job.Status.FAILED, Job.Status.CANCELLED):
        context["import_error"] = job.error or "The import failed."
    return context


def _import_answer(request, context, status=None):
    if status is None:
        status = 400 if "import_error" in context else 200
    if request.htmx:
        return render(request, "sessions_app/_import_result.html", context, status=status)
    return render(
        request, "sessions_app/session_list.html", _list_context(request, **context), status=status
    )


@piweb_view(methods=("POST",))
def new_session(request):
    """`folder`: one of the user's folders (the form's list), or empty for a fresh folder
    named after the session; `cwd` (the composer's /new) a path in the user's area."""
    params = form(request)
    name = params.stripped("name", limit=500)
    profile = params.stripped("model_profile")
    cwd, problem = _new_session_folder(request.user, params, name)
    if profile and profile not in model_profiles():
        problem = problem or f"Unknown model profile {profile!r}."
    real_cwd = ""
    if not problem:
        # Inside the user's own folder of a workspace root (created on demand), never
        # another user's: the same rule chat and the worker apply before running tools.
        user_workspace(request.user)
        try:
            real_cwd = make_session_cwd(cwd, request.user)
        except WorkspaceError as exc:  # shown in the new-session form
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


def _new_session_folder(user, params, name: str) -> tuple[str, str | None]:
    """(the folder asked for, the problem with it or None)."""
    cwd = params.stripped("cwd")
    if cwd:
        return cwd, None
    folder = params.stripped("folder")
    if not folder:
        return workspaces.fresh_folder(user, name), None
    if folder not in workspaces.existing_workspaces(user):
        return "", "Pick one of your folders, or a new folder."
    return folder, None


@session_view(methods=None)
def session_detail(request, access):
    """The session page: every panel from its own context builder (selectors/panels/)."""
    stamp = page_stamp(access.session.pk)  # before the panels read: a change after it shows
    context = session_page_context(access, tree_state(request.GET), request.user)
    context["page_stamp"] = stamp
    context["gauge"] = context_gauge(access.session)  # (usage: in the page context)
    entry = context.pop("entry", None)
    if entry is not None:
        context["entry_html"] = render_to_string(
            "sessions_app/tree/_entry.html",
            entry_context(access, entry, context["view_leaf"]),
            request=request,
        )
    return render(request, "sessions_app/session_detail.html", context)


@session_view(methods=None)
def provenance_panel(request, access):
    """The provenance line alone (the page refreshes it as a followed file grows)."""
    context = {"session": access.session, "provenance": session_provenance(access.session)}
    return render(request, "sessions_app/_provenance.html", context)


@session_view(methods=None)
def session_stats(request, access):
    """The live part of the session header alone: entries, cost, tokens, context gauge
    (the page fetches it again after every websocket event that may change it)."""
    context = {"session": access.session, **head_context(access.session)}
    return render(request, "sessions_app/head/_stats.html", context)
