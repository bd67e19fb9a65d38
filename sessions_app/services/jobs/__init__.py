"""Background jobs: one lifecycle, one small module per kind.

- ``lifecycle``: create, enqueue (a registry from kind to Celery task name), claim (the
  attempt number is the claim token), heartbeat, finish and publish, sweep.
- ``compaction``, ``branch_summary``, ``compare_summary``, ``agent_run``,
  ``session_import`` (an upload to ``/import/``, imported in the worker),
  ``search_index`` (entries written in bulk, indexed for search after their commit),
  ``workspace_measure`` (a user's workspace folders, for the quota), ``write_back``
  (what piweb added to a followed session, appended to pi's file), ``snapshot_gc`` (a
  shadow repository packed, or removed once unused): one kind each;
  each registers a ``lifecycle.JobKind`` when imported; the app config imports them all
  (``apps.SessionsAppConfig.ready``), this package only those of its public API below,
  so that importing one kind (``search_index`` from the importer, say) does not import
  every other with it.
- ``summaries``: what the two summary kinds share (compaction settings, model calls,
  attaching the entry).

A new kind: write its module (request function, ``run(job, attempt)``, a
``lifecycle.register(JobKind(...))``) and import it in ``apps.py``; the generic task
``piweb.run_job`` runs it.

The names below are the package's public API (views, tasks and tests use them).
"""

from sessions_app.services.jobs import branch_summary, compaction
from sessions_app.services.jobs.branch_summary import request_branch_summary
from sessions_app.services.jobs.compaction import (
    compact_for_overflow,
    context_tokens_at_leaf,
    maybe_compact_after_run,
    request_compaction,
)
from sessions_app.services.jobs.lifecycle import (
    Heartbeat,
    JobError,
    job_event_data,
    publish_progress,
    run_job,
    start_sweeper,
)
from sessions_app.services.jobs.lifecycle import sweep as sweep_stale_jobs
from sessions_app.services.jobs.summaries import update_compaction_settings

__all__ = [
    "Heartbeat",
    "JobError",
    "branch_summary",
    "compact_for_overflow",
    "compaction",
    "context_tokens_at_leaf",
    "job_event_data",
    "maybe_compact_after_run",
    "publish_progress",
    "request_branch_summary",
    "request_compaction",
    "run_job",
    "start_sweeper",
    "sweep_stale_jobs",
    "update_compaction_settings",
]
