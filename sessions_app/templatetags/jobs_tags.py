"""Template helpers for the jobs panel."""

from django import template

from sessions_app.models import Job
from sessions_app.services import jobs

register = template.Library()

PHASES = {
    "queued": "waiting for a worker",
    "preparing": "preparing",
    "summarizing": "summarizing",
    "retrying": "provider error, retrying",
    "waiting_for_run": "waiting for the agent run to finish",
    "requeued": "worker stopped; queued again",
    "done": "done",
    "superseded": "superseded",
    "failed": "failed",
}


def progress_text(job: Job) -> str:
    progress = job.progress or {}
    phase = progress.get("phase") or job.status
    text = PHASES.get(phase, phase)
    if phase == "summarizing" and progress.get("steps", 1) > 1:
        text += f" ({progress.get('step')}/{progress.get('steps')})"
    if phase == "retrying":
        text += f" (retry {progress.get('retry')}: {progress.get('last_error', '')})"
    if progress.get("note"):
        text = progress["note"]
    return text


def jobs_list_context(session) -> dict:
    recent = jobs.recent_jobs(session, limit=10)
    for job in recent:
        job.progress_text = progress_text(job)
        job.trigger = (job.params or {}).get("trigger", "")
        job.offline = job.model == "offline summarizer"
    return {"jobs": recent, "any_active": any(j.status in Job.ACTIVE for j in recent)}


@register.simple_tag
def jobs_panel(session, access):
    """Everything the jobs panel needs besides `session` and `access`."""
    return {
        **jobs_list_context(session),
        "settings": jobs.compaction_settings(session),
        "can_edit": access.can_edit,
    }
