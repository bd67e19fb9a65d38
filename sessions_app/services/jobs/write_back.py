"""The write-back job: what piweb adds to a session followed from a pi file is appended to
that file in a worker (`services/write_back.py` says how), never in the web request or the
agent turn that added it.

Its subscriber to the entry-written event (`entry_written.py`) runs in the writer's
transaction, with the session row locked: it notes the entry as pending and queues one
job for the session, unless one is queued already (it will write what is pending when it
runs, this entry included). The job is sent after the commit. ``params["session"]`` is
the session's pk; the job has no session of its own (no page shows it, and it publishes
no ``job_progress``). Writing back is idempotent (the file is compared with the session
first), so a run whose worker died is simply run again; waiting for pi or failing marks
the write-back due, and the follower tries it again (`write_back.flush_due`).
"""

from __future__ import annotations

from sessions_app.models import Job, Session
from sessions_app.services import entry_written, write_back
from sessions_app.services.jobs import lifecycle

Status = Job.Status


def request_write_back(session: Session) -> Job:
    """The queued write-back job of `session` (whose row the caller has locked): the one
    already waiting, or a new one sent after the commit."""
    waiting = Job.objects.filter(
        kind=Job.Kind.WRITE_BACK, status=Status.QUEUED, params__session=session.pk
    ).first()
    if waiting is not None:
        return waiting
    job = Job.objects.create(
        kind=Job.Kind.WRITE_BACK,
        status=Status.QUEUED,
        params={"session": session.pk},
        progress={"phase": "queued"},
    )
    lifecycle.enqueue(job)
    return job


def on_entry_written(written: entry_written.EntryWritten) -> None:
    if write_back.note_appended(written.session, written.entry.pi_id):
        request_write_back(written.session)


entry_written.subscribe(entry_written.Subscriber("write_back", in_transaction=on_entry_written))


def run(job: Job, attempt: int) -> str | None:
    session_pk = (job.params or {}).get("session")
    if not Session.objects.filter(pk=session_pk).exists():  # deleted since
        return lifecycle.finish_own(job, attempt, Status.CANCELLED, phase="done")
    write_back.write_back_quietly(session_pk)
    return lifecycle.finish_own(job, attempt, Status.DONE, phase="done")


KIND = lifecycle.register(
    lifecycle.JobKind(
        kind=Job.Kind.WRITE_BACK,
        on_stale=lifecycle.REQUEUE,
        queue=None,  # the default queue: small tasks, served with the imports
        run=run,
    )
)
