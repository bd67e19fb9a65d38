"""Celery tasks. They stay thin: load ids, call a service, nothing else.

Services never import this module: they send a task by its name (the job kinds name
theirs in ``services/jobs``' registry), so the names here are part of that contract.
"""

from celery import shared_task
from celery.signals import worker_ready

from sessions_app.services import jobs
from sessions_app.services.health import record_ping
from sessions_app.services.jobs.search_index import request_index
from sessions_app.services.jobs.workspace_measure import request_measure


@shared_task(name="piweb.ping")
def ping(value: str) -> str:
    """A round-trip probe used by health checks and tests."""
    return record_ping(value)


# --- jobs (services/jobs): every kind with a `run` ----------------------------------------


@shared_task(name="piweb.run_job", acks_late=True, reject_on_worker_lost=True)
def run_job(job_id: str) -> str | None:
    """Run a queued Job of any kind with a `run` (idempotent: see services/jobs/lifecycle):
    summaries, imports, search indexing, workspace measures."""
    return jobs.run_job(job_id)


# The names earlier versions queued summary jobs and agent runs under: kept so that their
# messages still run after an upgrade.
run_summary_job = shared_task(name="piweb.run_summary_job", acks_late=True)(run_job.run)
run_compare_summary_job = shared_task(name="piweb.compare_summary", acks_late=True)(run_job.run)
agent_run = shared_task(name="piweb.agent_run", acks_late=True)(run_job.run)


def _start_job_sweeper(sender=None, **kwargs):
    """Each worker sweeps stale jobs of every kind itself: no Celery beat needed."""
    jobs.start_sweeper()


def _connect_job_sweeper():
    worker_ready.connect(_start_job_sweeper, weak=False, dispatch_uid="piweb-job-sweeper")


_connect_job_sweeper()


# The names earlier versions queued post-import work and workspace measures under, with
# their own arguments: kept so that a message still waiting at an upgrade becomes the job
# that does that work now (services/jobs/search_index.py, workspace_measure.py).


@shared_task(name="piweb.finish_import", acks_late=True)
def finish_import(session_pk: int, from_seq: int) -> None:
    request_index([(session_pk, from_seq)], tidy=True)


@shared_task(name="piweb.finish_imports", acks_late=True)
def finish_imports(work: list[list[int]]) -> None:
    request_index([(session_pk, from_seq) for session_pk, from_seq in work], tidy=True)


@shared_task(name="piweb.measure_workspace", acks_late=True)
def measure_workspace(user_pk: int) -> None:
    request_measure(user_pk)
