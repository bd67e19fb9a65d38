"""Celery tasks. They stay thin: load ids, call a service, nothing else."""

from celery import shared_task


@shared_task(name="piweb.ping")
def ping(value: str) -> str:
    """A round-trip probe used by health checks and tests."""
    from sessions_app.services.health import record_ping

    return record_ping(value)


# --- jobs area: compaction and branch summaries ------------------------------------------


@shared_task(name="piweb.run_summary_job", acks_late=True, reject_on_worker_lost=True)
def run_summary_job(job_id: str) -> str | None:
    """Run a compaction / branch-summary Job (idempotent: redelivery writes nothing twice)."""
    from sessions_app.services.jobs import run_job

    return run_job(job_id)


def _start_job_sweeper(sender=None, **kwargs):
    """Each worker sweeps stale jobs (dead workers) itself: no Celery beat needed."""
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


@shared_task(name="piweb.compare_summary", acks_late=True)
def run_compare_summary_job(job_id: str):
    """Summarize the difference of two branches (review area; services/compare.py)."""
    from sessions_app.services.compare import run_compare_summary

    return run_compare_summary(job_id)


@shared_task(name="piweb.agent_run", acks_late=True)
def agent_run(job_id: str) -> str | None:
    """Chat: run one queued agent turn (or `!cmd`) to the end; see services/chat.py."""
    from sessions_app.services.chat import execute_run

    return execute_run(job_id)
