"""The write-back job: what piweb adds to a session followed from a pi file is appended to
that file in a worker (`services/write_back.py` says how), never in the web request or the
agent turn that added it.

Its subscriber to the entry-written event (`entry_written.py`) runs in the writer's
transaction, with the session row locked: it notes the entry as pending and queues one
job for the session, unless one is queued already (it will write what is pending when it
runs, this entry included). The job is sent after the commit. "Write back now" and turning
write-back on queue it too (`write_back_now`, `set_enabled`), so no request writes pi's
file. ``params["session"]`` is
the session's pk; the job has no session of its own (no page shows it, and it publishes
no ``job_progress``). Writing back is idempotent (the file is compared with the session
first), so a run whose worker died is simply run again; waiting for pi or failing marks
the write-back due, and the follower tries it again (`write_back.flush_due`).
"""

from __future__ import annotations

from django.db import transaction

from sessions_app.models import Job, Session
from sessions_app.selectors.pi_file import followed_file, write_back_enabled
from sessions_app.selectors.sessions import session_exists
from sessions_app.services import entry_written, sessions, write_back
from sessions_app.services.jobs import lifecycle

Status = Job.Status


def request_write_back(session: Session, *, leaf_marker: bool = False, actor=None) -> Job:
    """The queued write-back job of `session` (whose row the caller has locked): the one
    already waiting (now also putting piweb's leaf last, if `leaf_marker`), or a new one
    sent after the commit."""
    waiting = (
        Job.objects.select_for_update()
        .filter(kind=Job.Kind.WRITE_BACK, status=Status.QUEUED, params__session=session.pk)
        .first()
    )
    if waiting is not None:
        if leaf_marker and not waiting.params.get("leaf_marker"):
            waiting.params = {**waiting.params, "leaf_marker": True}
            waiting.save(update_fields=["params"])
        return waiting
    job = Job.objects.create(
        kind=Job.Kind.WRITE_BACK,
        status=Status.QUEUED,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
        params={"session": session.pk, **({"leaf_marker": True} if leaf_marker else {})},
        progress={"phase": "queued"},
    )
    lifecycle.enqueue(job)
    return job


def write_back_now(session: Session, *, actor=None) -> write_back.Result:
    """ "Write back now": queue the write of what pi's file lacks, piweb's leaf last (the
    worker writes it; the pi-file box shows the outcome)."""
    row = followed_file(session)
    if row is None:
        return write_back.Result("not_followed")
    if not write_back_enabled(session):
        return write_back.Result("off", path=row.path)
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        request_write_back(locked, leaf_marker=True, actor=actor)
    return write_back.Result("queued", path=row.path)


def set_enabled(session: Session, on: bool, *, actor=None) -> write_back.Result:
    """Turn write-back on (queueing the write of what the file lacks) or off."""
    result = write_back.set_enabled(session, on, actor=actor)
    if on:
        with transaction.atomic():
            request_write_back(sessions.lock_session(session.pk), actor=actor)
    return result


def on_entry_written(written: entry_written.EntryWritten) -> None:
    if write_back.note_appended(written.session, written.entry.pi_id):
        request_write_back(written.session)


entry_written.subscribe(entry_written.Subscriber("write_back", in_transaction=on_entry_written))


def run(job: Job, attempt: int) -> str | None:
    session_pk = (job.params or {}).get("session")
    if session_pk is None or not session_exists(session_pk):  # deleted since
        return lifecycle.finish_own(job, attempt, Status.CANCELLED, phase="done")
    params = job.params or {}
    write_back.write_back_quietly(
        session_pk, leaf_marker=bool(params.get("leaf_marker")), actor=job.created_by
    )
    return lifecycle.finish_own(job, attempt, Status.DONE, phase="done")


KIND = lifecycle.register(
    lifecycle.JobKind(
        kind=Job.Kind.WRITE_BACK,
        on_stale=lifecycle.REQUEUE,
        queue=None,  # the default queue: small tasks, served with the imports
        run=run,
    )
)
