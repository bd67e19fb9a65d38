"""Branch compare: the compare page and its summary job.

Every view goes through the gate (`responses.session_view`); thin: parse input, call a
service, render.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode

from sessions_app.models import Job
from sessions_app.params import form, query
from sessions_app.presentation.compare import rendered_comparison
from sessions_app.responses import session_view
from sessions_app.selectors.access import EDITOR
from sessions_app.selectors.compare import CompareError
from sessions_app.selectors.jobs import latest_job, session_job
from sessions_app.services.jobs import compare_summary as compare_jobs


@session_view()
def compare(request, access):
    params = query(request)
    a, b = params.stripped("a"), params.stripped("b")
    context = {"access": access, "session": access.session, "a": a, "b": b}
    status = 200
    if a and b:
        try:
            context["comparison"] = rendered_comparison(access.session, a, b)
            context["job"] = latest_job(access.session, Job.Kind.COMPARE_SUMMARY, a, b)
        except CompareError as exc:  # shown on the page, with the form
            context["error"] = str(exc)
            status = 400
    return render(request, "sessions_app/compare/compare.html", context, status=status)


@session_view(EDITOR, methods=("POST",))  # a summary is a paid LLM job: editors and owners
def compare_summary(request, access):
    params = form(request)
    a, b = params.text("a"), params.text("b")
    job = compare_jobs.request_compare_summary(access.session, a, b, actor=request.user)
    if request.htmx:
        return render(
            request,
            "sessions_app/compare/_compare_job.html",
            {"session": access.session, "job": job},
        )
    return redirect(
        reverse("sessions_app:compare", args=[access.session.pi_id])
        + "?"
        + urlencode({"a": a, "b": b})
    )


@session_view()
def compare_job(request, access, job_id):
    job = session_job(access.session, job_id, Job.Kind.COMPARE_SUMMARY)
    if job is None:
        raise Http404("No such comparison job.")
    return render(
        request, "sessions_app/compare/_compare_job.html", {"session": access.session, "job": job}
    )
