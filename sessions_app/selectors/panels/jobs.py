"""The jobs panel: compactions and branch summaries of a session, and its settings."""

from __future__ import annotations

from sessions_app.models import Job
from sessions_app.selectors.jobs import recent_jobs
from sessions_app.selectors.llm.windows import compaction_settings

RECENT_JOBS = 10
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


def jobs_list_context(access) -> dict:
    """The job list (the jobs panel and `jobs_panel`)."""
    recent = recent_jobs(access.session, limit=RECENT_JOBS)
    for job in recent:
        job.progress_text = progress_text(job)
        job.trigger = (job.params or {}).get("trigger", "")
        job.offline = job.model == "offline summarizer"
    return {
        "session": access.session,
        "access": access,
        "jobs": recent,
        "any_active": any(j.status in Job.ACTIVE for j in recent),
    }


def settings_context(access) -> dict:
    """The compaction settings form (the jobs panel and `jobs_settings`)."""
    return {
        "session": access.session,
        "access": access,
        "settings": compaction_settings(access.session),
    }


def jobs_context(access) -> dict:
    """The whole jobs panel of the session page (`jp` in its template)."""
    return {
        **jobs_list_context(access),
        "settings": compaction_settings(access.session),
        "can_edit": access.can_edit,
    }
