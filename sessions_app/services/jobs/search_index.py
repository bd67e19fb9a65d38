"""The search indexing job: entries written in bulk reach the search index after their
commit, in a worker, so the writer (an import, a follower's big append, a fork) and the
session's page do not wait for it.

``params["work"]`` lists ``[session pk, first new seq]`` pairs; ``params["tidy"]`` says
the entries follow an import, whose table is tidied first (``bulk_entries.tidy_entries``:
VACUUM on PostgreSQL, the write-ahead log checkpoint on SQLite). The job has no session
(it may cover many, and no page shows it).

Everything it does is idempotent (an entry already indexed is skipped), so a run whose
worker died is simply run again. When no broker takes its message, the job is run at once
in the process that asked for it (after the commit), rather than leave search behind
until a sweep sends it again.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from sessions_app.models import Job
from sessions_app.selectors.jobs import still_unsent
from sessions_app.selectors.sessions import session_exists
from sessions_app.services.bulk_entries import tidy_entries
from sessions_app.services.jobs import lifecycle
from sessions_app.services.search import copy_search_rows, index_stored_entries

Status = Job.Status


def request_index(
    work: list[tuple[int, int]], *, tidy: bool = False, copies: Sequence[tuple[int, int]] = ()
) -> Job:
    """A queued indexing job for `work` ((session pk, first new seq) pairs) and `copies`
    ((source pk, fork pk) pairs: a fork's rows copied from its source's), sent to a
    worker after the caller's commit (or run here then, when no broker answers)."""
    params: dict = {"work": [[int(pk), int(seq)] for pk, seq in work], "tidy": tidy}
    if copies:
        params["copies"] = [[int(source), int(fork)] for source, fork in copies]
    with transaction.atomic():
        job = Job.objects.create(
            kind=Job.Kind.SEARCH_INDEX,
            status=Status.QUEUED,
            params=params,
            progress={"phase": "queued"},
        )
        lifecycle.enqueue(job)
        transaction.on_commit(lambda: _run_here_if_unsent(job.pk))  # (after the sending)
    return job


def _run_here_if_unsent(job_pk) -> None:
    if still_unsent(job_pk):
        lifecycle.run_job(job_pk)


INLINE_INDEX_LIMIT = 500  # more new entries than this are indexed by a job


def index_new_entries(session_pk: int, from_seq: int, count: int) -> None:
    """Index the `count` entries a bulk writer has just added to a session (seq >=
    from_seq), in the writer's transaction: the call the follower's appends and a fork make
    (an import indexes after its commit instead: `importer.finish_import`; an appended entry
    is indexed by `search.index_written`). Up to INLINE_INDEX_LIMIT are indexed here and
    now, so search finds them when the write commits; more are left to a `search_index`
    job, sent after the commit."""
    if count <= 0:
        return
    if count <= INLINE_INDEX_LIMIT:
        index_stored_entries(session_pk, from_seq)
        return
    request_index([(session_pk, from_seq)])


def copy_new_search_rows(source_pk: int, fork_pk: int, count: int) -> None:
    """A fork's search rows copied from its source's, in the fork's transaction: up to
    INLINE_INDEX_LIMIT entries here and now, more by a `search_index` job after the
    commit (the copy is one statement, but the full-text index of each row is built
    again: PostgreSQL's tsvector, SQLite's FTS5 triggers)."""
    if count <= 0:
        return
    if count <= INLINE_INDEX_LIMIT:
        copy_search_rows(source_pk, fork_pk)
        return
    request_index([], copies=[(source_pk, fork_pk)])


def _copy(source_pk: int, fork_pk: int) -> int:
    """The job's copy; a source deleted since the fork has no rows left to copy: the
    fork is then indexed from its own lines."""
    copied = copy_search_rows(source_pk, fork_pk)
    if not session_exists(source_pk):
        return index_stored_entries(fork_pk, 0)
    return copied


def run(job: Job, attempt: int) -> str | None:
    params = job.params or {}
    if params.get("tidy"):
        tidy_entries()
    read = sum(index_stored_entries(pk, seq) for pk, seq in params.get("work") or [])
    read += sum(_copy(source, fork) for source, fork in params.get("copies") or [])
    return lifecycle.finish_own(job, attempt, Status.DONE, phase="done", entries=read)


KIND = lifecycle.register(
    lifecycle.JobKind(
        kind=Job.Kind.SEARCH_INDEX,
        on_stale=lifecycle.REQUEUE,
        queue=None,  # the default queue: small tasks, served with the imports
        run=run,
    )
)
