"""services/jobs/session_import.py: an uploaded file stored on disk is imported by a job.
The job reports how far it is, keeps the importer's report (or its error), points at the
session it imported, and deletes the file whatever the outcome; running it again, or
importing the same file again, never makes a second session.

Jobs run here through the lifecycle's `run_job` (what the worker's task calls), their
messages sent to a queue no worker consumes; one test goes through the real worker."""

from __future__ import annotations

import io
import json

import pytest
from django.db import connection

from sessions_app.models import Job, Session
from sessions_app.services.jobs import run_job, session_import
from sessions_app.services.jobs.session_import import report_data, request_import
from tests.support.pi_files import header, jsonl_text, message
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]

SID = "bbbbbbbb-2222-3333-4444-555555555555"


@pytest.fixture
def owner(make_user):
    return make_user("uploader")


def stored_upload(tmp_path, data: bytes, name: str = "upload-1.jsonl"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def session_bytes(sid: str = SID, entries: int = 3) -> bytes:
    items = [message(f"a{i}", f"a{i - 1}" if i else None, text=f"t{i}") for i in range(entries)]
    return jsonl_text(header(sid), items).encode()


def queued(owner, path, filename="s.jsonl") -> Job:
    return request_import(owner, path, filename, path.stat().st_size)


@pytest.mark.usefixtures("tasks_stay_in_process")
class TestInProcess:
    def test_a_request_is_a_queued_job_that_remembers_the_file(self, owner, tmp_path):
        path = stored_upload(tmp_path, session_bytes())
        job = request_import(owner, path, "x" * 600 + ".jsonl", 1234)
        job.refresh_from_db()
        assert job.kind == Job.Kind.IMPORT and job.status == Job.Status.QUEUED
        assert job.session is None and job.created_by == owner
        assert job.params == {"path": str(path), "filename": "x" * 500, "size": 1234}
        assert job.progress == {"phase": "queued", "done": 0, "total": 1234}

    def test_the_job_imports_points_at_the_session_and_deletes_the_file(self, owner, tmp_path):
        data = session_bytes()
        path = stored_upload(tmp_path, data)
        job = queued(owner, path)
        assert run_job(job.pk) == "done"
        job.refresh_from_db()
        session = Session.objects.get(pi_id=SID)
        assert job.session == session and session.owner == owner
        assert session.entries.count() == 3
        assert job.progress["phase"] == "done"
        assert job.progress["done"] == job.progress["total"] == 2 * len(data)
        report = job.progress["report"]
        assert report["status"] == "created" and report["entries_added"] == 3
        assert report["filename"] == "s.jsonl" and report["session_pi_id"] == SID
        assert not path.exists()
        assert run_job(job.pk) is None  # an ended job is not run again

    def test_the_same_file_again_is_unchanged_and_a_grown_one_adds_what_is_new(
        self, owner, tmp_path
    ):
        first = queued(owner, stored_upload(tmp_path, session_bytes(entries=2), "one"))
        again = queued(owner, stored_upload(tmp_path, session_bytes(entries=2), "two"))
        grown = queued(owner, stored_upload(tmp_path, session_bytes(entries=4), "three"))
        assert [run_job(j.pk) for j in (first, again, grown)] == ["done"] * 3
        reports = [Job.objects.get(pk=j.pk).progress["report"] for j in (first, again, grown)]
        assert [r["status"] for r in reports] == ["created", "unchanged", "updated"]
        assert [r["entries_added"] for r in reports] == [2, 0, 2]
        assert Session.objects.count() == 1
        imports = Job.objects.filter(kind=Job.Kind.IMPORT)
        assert {j.session_id for j in imports} == {Session.objects.get().pk}

    def test_a_malformed_file_fails_with_the_importers_message(self, owner, tmp_path):
        path = stored_upload(tmp_path, b"not json\n{also not\n")
        job = queued(owner, path)
        assert run_job(job.pk) == "failed"
        job.refresh_from_db()
        assert job.error and "s.jsonl" in job.error, job.error
        assert job.session is None and not Session.objects.exists()
        assert not path.exists()

    def test_skipped_lines_and_warnings_are_kept_in_the_report(self, owner, tmp_path):
        lines = [json.dumps(header(SID)), "{broken", json.dumps(message("a1", "nowhere"))]
        job = queued(owner, stored_upload(tmp_path, ("\n".join(lines) + "\n").encode()))
        assert run_job(job.pk) == "done"
        report = Job.objects.get(pk=job.pk).progress["report"]
        assert report["skipped_count"] == 1 and report["skipped"][0][0] == 2
        assert report["warning_count"] == 1 and len(report["warnings"]) == 1

    def test_a_file_no_longer_there_fails_with_upload_it_again(self, owner, tmp_path):
        path = stored_upload(tmp_path, session_bytes())
        job = queued(owner, path)
        path.unlink()
        assert run_job(job.pk) == "failed"
        job.refresh_from_db()
        assert "no longer on the server; upload it again" in job.error

    def test_an_uploader_deleted_meanwhile_fails_the_job_and_the_file_goes(self, owner, tmp_path):
        path = stored_upload(tmp_path, session_bytes())
        job = queued(owner, path)
        owner.delete()
        assert run_job(job.pk) == "failed"
        job.refresh_from_db()
        assert "no longer exists" in job.error and not Session.objects.exists()
        assert not path.exists()

    def test_the_report_of_a_refused_file_has_no_session(self, owner):
        from sessions_app.services.importer import ImportReport

        report = ImportReport(filename="f.jsonl", status="unchanged", session=None)
        data = report_data(report)
        assert data["session_pi_id"] == "" and data["session_label"] == ""
        assert data["filename"] == "f.jsonl" and data["status"] == "unchanged"
        json.dumps(data)  # kept as JSON on the job


@pytest.mark.django_db(transaction=True)
def test_progress_is_reported_while_the_file_is_read(owner, monkeypatch):
    """The bytes read are reported from a thread of their own (committed, so the page
    sees them before the import's transaction ends); not on SQLite, whose one writer is
    the import's until it commits."""
    monkeypatch.setattr(session_import, "PROGRESS_SECONDS", 0.05)
    job = Job.objects.create(
        kind=Job.Kind.IMPORT, status=Job.Status.RUNNING, attempts=1, created_by=owner
    )
    with session_import._Progress(io.BytesIO(b"x" * 100), job, 1, 100) as progress:
        assert progress.read(40) == b"x" * 40
        if connection.vendor == "sqlite":
            assert not progress.thread.is_alive()
        else:
            assert wait_until(lambda: Job.objects.get(pk=job.pk).progress.get("done") == 40)
            assert Job.objects.get(pk=job.pk).progress == {
                "phase": "importing",
                "done": 40,
                "total": 200,
            }
    assert not progress.thread.is_alive()


@pytest.mark.django_db(transaction=True)
def test_a_requested_import_is_run_by_the_worker(worker, owner, tmp_path):
    path = stored_upload(tmp_path, session_bytes())
    job = queued(owner, path)
    assert wait_until(lambda: Job.objects.get(pk=job.pk).status == "done", timeout=60)
    job.refresh_from_db()
    assert job.session.pi_id == SID and job.progress["report"]["status"] == "created"
    assert not path.exists()
