"""Importing a pi session file through the page: the upload, then the import job's status.

``import_session`` takes the upload with ``ImportUploadHandler`` (straight to disk, size
checked as it arrives, refused at ``PIWEB_MAX_UPLOAD_BYTES`` without reading the rest)
and queues an import job (services/jobs/session_import); it answers 202 with the job's
status partial, which polls ``import_status`` until the job is over and then shows the
importer's report or its error.
"""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_POST

from sessions_app.models import Job
from sessions_app.services.jobs.session_import import request_import
from sessions_app.upload_handlers import ImportUploadHandler, limit_text


@csrf_exempt  # the handlers must be set before anything reads the body; CSRF is checked below
@login_required
@require_POST
def import_session(request):
    request.upload_handlers = [ImportUploadHandler(request)]
    return _import_session(request)


@csrf_protect
def _import_session(request):
    handler = request.upload_handlers[0]
    upload = request.FILES.get("file")
    if handler.too_large:
        return _answer(
            request,
            {"import_error": f"That file is larger than the import limit ({limit_text()})."},
        )
    if upload is None:
        return _answer(request, {"import_error": "Choose a .jsonl file to import."})
    job = request_import(request.user, upload.path, upload.name, upload.size)
    response = _answer(request, _job_context(job), status=202)
    response["Location"] = reverse("sessions_app:import_status", args=[job.pk])
    return response


@login_required
@require_GET
def import_status(request, job_id):
    """Where an import job stands (the partial polls itself until the job is over)."""
    job = Job.objects.filter(pk=job_id, kind=Job.Kind.IMPORT, created_by=request.user).first()
    if job is None:
        raise Http404("No such import.")
    context = _job_context(job)
    status = 400 if job.status in (Job.Status.FAILED, Job.Status.CANCELLED) else 200
    return _answer(request, context, status=status)


def _job_context(job: Job) -> dict:
    progress = job.progress or {}
    context = {"import_job": job, "import_progress": progress}
    if job.status == Job.Status.DONE:
        context["import_report"] = progress.get("report") or {}
    elif job.status in (Job.Status.FAILED, Job.Status.CANCELLED):
        context["import_error"] = job.error or "The import failed."
    return context


def _answer(request, context, status=None):
    if status is None:
        status = 400 if "import_error" in context else 200
    if request.htmx:
        return render(request, "sessions_app/_import_result.html", context, status=status)
    from sessions_app.views.pages import _list_context

    return render(
        request, "sessions_app/session_list.html", _list_context(request, **context), status=status
    )
