"""The import job: a session file uploaded to ``/import/`` is imported in a worker.

The web process only streams the upload to a file of ``PIWEB_IMPORT_DIR``
(``upload_handlers.ImportUploadHandler``) and calls :func:`request_import`; the worker
reads that file with the importer (``services/importer.import_jsonl_stream``; the
search indexing after its commit is a ``search_index`` job of its own), reports
how far it is (``progress``: bytes done of bytes to do, the page's progress bar), and
stores the importer's report, or its error, on the job. The job then points at the
session it imported, and the file is deleted whatever the outcome.

A run whose worker died is run again (up to ``PIWEB_JOB_MAX_ATTEMPTS``): importing is
idempotent (a file imported before is "unchanged", a file that grew adds only what is
new), and nothing is half-imported (one transaction per file).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from django.db import connection, transaction

from piweb import queues
from sessions_app.models import Job
from sessions_app.services.importer import SessionImportError, import_jsonl_stream
from sessions_app.services.jobs import lifecycle

log = logging.getLogger(__name__)

Status = Job.Status
PROGRESS_SECONDS = 0.5


def request_import(owner, path: Path, filename: str, size: int) -> Job:
    """A queued import of the stored upload at `path`, enqueued after the commit."""
    with transaction.atomic():
        job = Job.objects.create(
            session=None,
            kind=Job.Kind.IMPORT,
            status=Status.QUEUED,
            created_by=owner,
            params={"path": str(path), "filename": filename[:500], "size": size},
            progress={"phase": "queued", "done": 0, "total": size},
        )
        lifecycle.enqueue(job)
    return job


class _Progress:
    """The stored file as the importer reads it, counting the bytes read; a thread of its
    own (with its own database connection, outside the import's transaction, which would
    hide the progress from the page until the end) reports them to the job. The importer
    reads the file twice (its digest, then the entries): `total` is both."""

    def __init__(self, fileobj, job: Job, attempt: int, size: int):
        self.fileobj, self.job, self.attempt = fileobj, job, attempt
        self.total = max(1, 2 * size)
        self.done = 0
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._report, name=f"import-{job.pk}", daemon=True)

    def read(self, n=-1):
        chunk = self.fileobj.read(n)
        self.done += len(chunk)
        return chunk

    def _report(self) -> None:
        try:
            while not self.stop_event.wait(PROGRESS_SECONDS):
                try:
                    lifecycle.set_progress(
                        self.job,
                        self.attempt,
                        phase="importing",
                        done=min(self.done, self.total),
                        total=self.total,
                    )
                except Exception as exc:  # a missed report is not fatal
                    log.warning("import progress not recorded: %s", exc)
        finally:
            connection.close()

    def __enter__(self):
        # SQLite has one writer: the import's transaction holds it to the end, so a
        # report could only wait (the bar then goes from queued to done at once).
        if connection.vendor != "sqlite":
            self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(10)

    def __getattr__(self, name):
        return getattr(self.fileobj, name)


def report_data(report) -> dict:
    """The importer's report as the job keeps it (JSON) and the page shows it."""
    session = report.session
    return {
        "filename": report.filename,
        "status": report.status,
        "session_pi_id": session.pi_id if session is not None else "",
        "session_label": str(session) if session is not None else "",
        "entries_added": report.entries_added,
        "migrated_from": report.migrated_from,
        "skipped": [[line, reason] for line, reason in report.skipped],
        "skipped_count": report.skipped_count,
        "warnings": list(report.warnings),
        "warning_count": report.warning_count,
    }


def run(job: Job, attempt: int) -> str | None:
    params = job.params or {}
    path = Path(params.get("path", ""))
    owner = job.created_by
    if owner is None:
        raise lifecycle.RunFailed("The user who uploaded this file no longer exists.")
    try:
        fileobj = path.open("rb")
    except OSError:
        raise lifecycle.RunFailed(
            "The uploaded file is no longer on the server; upload it again."
        ) from None
    size = int(params.get("size") or 0)
    with fileobj, _Progress(fileobj, job, attempt, size) as progress:
        try:
            report = import_jsonl_stream(
                progress,
                owner,
                filename=params.get("filename", ""),
                # search indexing (and VACUUM) as its own job: the session opens sooner
                after_commit="worker",
            )
        except SessionImportError as exc:
            raise lifecycle.RunFailed(str(exc)) from None
    if report.session is not None:
        Job.objects.filter(pk=job.pk, status=Status.RUNNING, attempts=attempt).update(
            session=report.session
        )
    return lifecycle.finish_own(
        job,
        attempt,
        Status.DONE,
        phase="done",
        done=2 * size,
        total=2 * size,
        report=report_data(report),
    )


def _delete_upload(job: Job) -> None:
    """The stored upload goes once the job is over, whatever its outcome."""
    if job.status in Job.ACTIVE:
        return
    path = (job.params or {}).get("path")
    if path:
        try:
            Path(path).unlink(missing_ok=True)
        except OSError as exc:
            log.warning("could not delete the upload %s: %s", path, exc)


KIND = lifecycle.register(
    lifecycle.JobKind(
        kind=Job.Kind.IMPORT,
        on_stale=lifecycle.REQUEUE,
        queue=queues.IMPORTS,
        stale_error="The worker importing this file stopped; upload it again.",
        lost_error="No worker picked this import up in time; upload it again.",
        on_finish=_delete_upload,
        run=run,
    )
)
