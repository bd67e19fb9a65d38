"""The Templates page (/templates/): a user's own pi prompt templates, kept in piweb.

The page lists them (and the shared ones of pi's agent folder); its forms post with htmx
and get the manager partial back (the list, the form and a message), so a refusal shows
inside the form with what was typed kept.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render

from sessions_app.core.errors import ServiceError
from sessions_app.params import form, query
from sessions_app.responses import piweb_view
from sessions_app.selectors import prompt_templates as templates_read
from sessions_app.services import prompt_templates

MANAGER = "sessions_app/prompt_templates/_manager.html"


def _manager(request, *, message="", level="ok", editing=None, status=200):
    context = {
        **templates_read.templates_page(request.user),
        "editing": editing or {"name": "", "text": "", "original": ""},
        "message": message,
        "level": level,
    }
    return render(request, MANAGER, context, status=status)


@piweb_view()
def templates_page(request):
    context = {
        **templates_read.templates_page(request.user),
        "editing": {"name": "", "text": "", "original": ""},
    }
    return render(request, "sessions_app/prompt_templates/page.html", context)


@piweb_view()
def edit_form(request):
    name = query(request).text("name", limit=200)
    text = templates_read.stored_template_text(request.user, name)
    if text is None:
        raise Http404("No such template.")
    return _manager(request, editing={"name": name, "text": text, "original": name})


@piweb_view(methods=("POST",))
def save(request):
    params = form(request)
    editing = {
        "name": params.text("name", limit=200),
        "text": params.text("text"),
        "original": params.text("original", limit=200),
    }
    try:
        saved = prompt_templates.save_template(
            request.user, editing["name"], editing["text"], replacing=editing["original"]
        )
    except ServiceError as exc:  # shown in the form, with what was typed
        return _manager(
            request, message=str(exc), level="error", editing=editing, status=exc.status
        )
    return _manager(request, message=f"Saved /{saved.name}.")


@piweb_view(methods=("POST",))
def delete(request):
    name = form(request).text("name", limit=200)
    try:
        prompt_templates.delete_template(request.user, name)
    except ServiceError as exc:
        return _manager(request, message=str(exc), level="error", status=exc.status)
    return _manager(request, message=f"Deleted /{name}.")


@piweb_view(methods=("POST",))
def import_folder(request):
    """`files`: the files of a folder (or any .md files) the browser picked."""
    uploads = request.FILES.getlist("files")
    limit = templates_read.MAX_TEMPLATE_BYTES + 1
    try:
        report = prompt_templates.import_templates(
            request.user,
            [(u.name, u.read(limit)) for u in uploads[: prompt_templates.MAX_IMPORT_FILES + 1]],
        )
    except ServiceError as exc:
        return _manager(request, message=str(exc), level="error", status=exc.status)
    message = f"Imported {len(report.saved)} template{'s' if len(report.saved) != 1 else ''}"
    message += f": {', '.join('/' + n for n in report.saved)}." if report.saved else "."
    if report.skipped:
        message += " Skipped: " + "; ".join(f"{n} ({why})" for n, why in report.skipped) + "."
    return _manager(request, message=message, level="ok" if report.saved else "error")
