"""Celery tasks. They stay thin: load ids, call a service, nothing else.

Services never import this module: they send a task by its name (the job kinds name
theirs in ``services/jobs``' registry), so the names here are part of that contract.
"""

from celery import shared_task


@shared_task(name="piweb.ping")
def ping(value: str) -> str:
    """A round-trip probe used by health checks and tests."""
    from sessions_app.services.health import record_ping

    return record_ping(value)


# --- jobs (services/jobs): compaction, branch and compare summaries, agent runs ---------


@shared_task(name="piweb.run_job", acks_late=True, reject_on_worker_lost=True)
def run_job(job_id: str) -> str | None:
    """Run a queued Job of any kind with a `run` (idempotent: see services/jobs/lifecycle)."""
    from sessions_app.services.jobs import run_job as run

    return run(job_id)


# The names earlier versions queued summary jobs and agent runs under: kept so that their
# messages still run after an upgrade.
run_summary_job = shared_task(name="piweb.run_summary_job", acks_late=True)(run_job.run)
run_compare_summary_job = shared_task(name="piweb.compare_summary", acks_late=True)(run_job.run)
agent_run = shared_task(name="piweb.agent_run", acks_late=True)(run_job.run)


def _start_job_sweeper(sender=None, **kwargs):
    """Each worker sweeps stale jobs of every kind itself: no Celery beat needed."""
    from sessions_app.services.jobs import start_sweeper

    start_sweeper()


def _connect_job_sweeper():
    from celery.signals import worker_ready

    worker_ready.connect(_start_job_sweeper, weak=False, dispatch_uid="piweb-job-sweeper")


_connect_job_sweeper()


@shared_task(name="piweb.finish_import", acks_late=True)
def finish_import(session_pk: int, from_seq: int) -> int:
    """What follows an import's commit: search indexing (idempotent; see the service)."""
    from sessions_app.services.importer import finish_import as finish

    return finish(session_pk, from_seq)


@shared_task(name="piweb.finish_imports", acks_late=True)
def finish_imports(work: list[list[int]]) -> None:
    """finish_import for imports committed together ([session pk, from seq] pairs)."""
    from sessions_app.services.importer import finish_imports as finish

    finish([(session_pk, from_seq) for session_pk, from_seq in work])


@shared_task(name="piweb.measure_workspace", acks_late=True)
def measure_workspace(user_pk: int) -> int:
    """Measure one user's workspaces (quota) and strip setuid/setgid bits (idempotent)."""
    from sessions_app.services.resources import measure_workspace as measure

    return measure(user_pk).bytes
