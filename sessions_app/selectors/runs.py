"""The agent runs of a session as the pages see them: their jobs, and the state the
worker keeps in Redis while each streams (`services/jobs/agent_run.py` writes it).

Runs are per branch: a run owns the branch below the entry it started from (its job's
``prepared_leaf_pi_id``, the user's message or the leaf of a ``!cmd``), so several
branches of one session may run at once. The run "on" a leaf is the active run that
started on the leaf's path (a run recorded without a starting entry covers every
branch, as all runs did before runs were per branch)."""

from __future__ import annotations

import json
import logging

import redis
from django.core.exceptions import ValidationError

from sessions_app.models import Entry, Job, Session
from sessions_app.selectors import paths
from sessions_app.selectors.shared_state import redis_client, redis_key

log = logging.getLogger(__name__)

UNSET = paths.UNSET


def state_key(session_pk: int, job_pk) -> str:
    """The Redis key of one run's in-progress state."""
    return redis_key("run", f"{session_pk}:{job_pk}")


def run_state(session: Session, job: Job | None = None) -> dict | None:
    """The in-progress state of `job` (default: the run on the session's leaf) as last
    saved by the worker, or None."""
    if job is None:
        job = active_run(session)
        if job is None:
            return None
    try:
        raw = redis_client().get(state_key(session.pk, job.pk))
    except redis.RedisError as exc:
        log.warning("could not read run state: %s", exc)
        return None
    return json.loads(raw) if raw else None


def _active_runs(session_pk: int):
    return Job.objects.filter(session_id=session_pk, kind=Job.Kind.AGENT_RUN, status__in=Job.ACTIVE)


def active_runs(session: Session) -> list[Job]:
    """Every queued or running agent run of the session (any branch), oldest first."""
    return list(_active_runs(session.pk).order_by("created_at"))


def run_active(session_pk: int) -> bool:
    """Whether an agent run is queued or working on any branch of the session (no row
    loaded): what a restore of the shared folder and a summary's wait look at."""
    return _active_runs(session_pk).exists()


def run_covering(session: Session, runs: list[Job], leaf_pi_id) -> Job | None:
    """The first of `runs` whose branch holds `leaf_pi_id` (the run started on its path)."""
    if not runs:
        return None
    if any(not job.prepared_leaf_pi_id for job in runs):
        return next(job for job in runs if not job.prepared_leaf_pi_id)
    if leaf_pi_id is None:
        return None
    leaf_pk = (
        Entry.objects.filter(session=session, pi_id=leaf_pi_id).values_list("pk", flat=True).first()
    )
    if leaf_pk is None:
        return None
    starts: dict[str, int] = dict(
        Entry.objects.filter(
            session=session, pi_id__in=[job.prepared_leaf_pi_id for job in runs]
        ).values_list("pi_id", "pk")
    )
    on_path = set(paths.path_pks(session, leaf_pk))
    for job in runs:
        start = starts.get(job.prepared_leaf_pi_id or "")
        if start is not None and start in on_path:
            return job
    return None


def active_run(session: Session, leaf_pi_id=UNSET) -> Job | None:
    """The queued or running agent run on the branch of `leaf_pi_id` (default: the
    session's leaf), or None."""
    runs = active_runs(session)
    if runs and leaf_pi_id is UNSET:  # the leaf as stored now (the object may be stale)
        leaf_pi_id = (
            Session.objects.filter(pk=session.pk).values_list("leaf__pi_id", flat=True).first()
        )
    return run_covering(session, runs, leaf_pi_id)


def run_of(session: Session, run_id) -> Job | None:
    """The session's active agent run with this id, or None."""
    if not run_id:
        return None
    try:
        return _active_runs(session.pk).filter(pk=run_id).first()
    except (ValueError, TypeError, ValidationError):  # not a job id
        return None
