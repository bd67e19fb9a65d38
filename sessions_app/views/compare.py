"""Branch compare: the compare page and its summary job.

Every view goes through access.check_access; thin: parse input, call a service, render.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from sessions_app.models import Job
from sessions_app.presentation.compare import rendered_comparison
from sessions_app.responses import bad_request
from sessions_app.selectors.compare import CompareError
from sessions_app.selectors.jobs import latest_job, session_job
from sessions_app.services.access import EDITOR, VIEWER, check_access
from sessions_app.services.jobs import compare_summary as compare_jobs


@login_required
@require_GET
def compare(request, session_id):
    access = check_access(request.user, session_id, VIEWER)
    a, b = request.GET.get("a", "").strip(), request.GET.get("b", "").strip()
    context = {"access": access, "session": access.session, "a": a, "b": b}
    status = 200
    if a and b:
        try:
            context["comparison"] = rendered_comparison(access.session, a, b)
            context["job"] = latest_job(access.session, Job.Kind.COMPARE_SUMMARY, a, b)
        except CompareError as exc:
            context["error"] = str(exc)
            status = 400
    return render(request, "sessions_app/compare/compare.html", context, status=status)


@login_required
@require_POST
def compare_summary(request, session_id):
    # A summary is a paid LLM job: editors and owners only.
    access = check_access(request.user, session_id, EDITOR)
    a, b = request.POST.get("a", ""), request.POST.get("b", "")
    try:
        job = compare_jobs.request_compare_summary(access.session, a, b, actor=request.user)
    except CompareError as exc:
        return bad_request(request, str(exc))
    if request.htmx:
        return render(
            request,
            "sessions_app/compare/_compare_job.html",
            {"session": access.session, "job": job},
        )
    return redirect(
        reverse("sessions_app:compare", args=[session_id]) + "?" + urlencode({"a": a, "b": b})
    )


@login_required
@require_GET
def compare_job(request, session_id, job_id):
    access = check_access(request.user, session_id, VIEWER)
    job = session_job(access.session, job_id, Job.Kind.COMPARE_SUMMARY)
    if job is None:
        raise Http404("No such comparison job.")
    return render(
        request, "sessions_app/compare/_compare_job.html", {"session": access.session, "job": job}
    )
