"""The /import/ upload: streamed to disk with its size checked as it arrives, refused at
PIWEB_MAX_UPLOAD_BYTES, then imported by a job (run here with the worker's own code,
``run_job``); the stored file is the worker's alone and goes when the job is over."""

from __future__ import annotations

import io
import json
import stat
import uuid
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app.models import Job, Session
from sessions_app.services.jobs import run_job
from sessions_app.upload_handlers import ENVELOPE_BYTES
from tests.support.pi_files import header, jsonl_text, message
from tests.support.web import client_for, post_import

pytestmark = pytest.mark.django_db


@pytest.fixture
def import_dir(settings, tmp_path):
    settings.PIWEB_IMPORT_DIR = tmp_path / "imports"
    return settings.PIWEB_IMPORT_DIR


def named(data: bytes, name: str = "s.jsonl") -> io.BytesIO:
    fileobj = io.BytesIO(data)
    fileobj.name = name
    return fileobj


def session_bytes(sid: str, entries: int = 3) -> bytes:
    items = [message(f"a{i}", f"a{i - 1}" if i else None, text=f"t{i}") for i in range(entries)]
    return jsonl_text(header(sid), items).encode()


def stored(import_dir: Path) -> list[Path]:
    return sorted(import_dir.glob("*")) if import_dir.exists() else []


def post(client, data: bytes, **headers):
    return client.post(reverse("sessions_app:session_import"), {"file": named(data)}, **headers)


def test_a_file_over_the_limit_is_refused_as_it_arrives_and_nothing_is_kept(
    owner, settings, import_dir
):
    settings.PIWEB_MAX_UPLOAD_BYTES = 4096
    data = session_bytes(str(uuid.uuid4()), entries=60)
    assert len(data) > 4096
    response = post(client_for(owner), data, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert "larger than the import limit" in response.content.decode()
    assert stored(import_dir) == [] and not Job.objects.filter(kind="import").exists()


def test_a_body_whose_length_is_over_the_limit_is_not_read_at_all(owner, settings, import_dir):
    settings.PIWEB_MAX_UPLOAD_BYTES = 4096
    data = b"x" * (4096 + ENVELOPE_BYTES + 10)
    response = post(client_for(owner), data)
    assert response.status_code == 400
    assert "larger than the import limit" in response.content.decode()
    assert stored(import_dir) == []  # the handler never opened a file


@pytest.mark.embedded
def test_a_file_at_the_limit_is_stored_0600_imported_by_the_job_then_deleted(
    owner, settings, import_dir
):
    sid = str(uuid.uuid4())
    data = session_bytes(sid)
    settings.PIWEB_MAX_UPLOAD_BYTES = len(data)
    response = post(client_for(owner), data, HTTP_HX_REQUEST="true")
    assert response.status_code == 202, response.content
    html = response.content.decode()
    assert "<progress" in html and "every 1s" in html  # the page polls the job
    job = Job.objects.get(kind="import", created_by=owner)
    assert job.status == "queued" and job.session_id is None
    [path] = stored(import_dir)
    mode = path.stat().st_mode
    assert stat.S_IMODE(mode) == 0o600 and not mode & (stat.S_ISUID | stat.S_ISGID)
    assert path.read_bytes() == data
    assert not Session.objects.filter(pi_id=sid).exists()  # the web process imported nothing

    assert run_job(job.pk) == "done"
    job.refresh_from_db()
    assert job.session.pi_id == sid and job.progress["done"] == job.progress["total"]
    assert job.progress["report"]["status"] == "created"
    assert job.progress["report"]["entries_added"] == 3
    assert stored(import_dir) == []
    assert run_job(job.pk) is None  # idempotent: an ended job is not run again

    page = client_for(owner).get(response["Location"], HTTP_HX_REQUEST="true")
    body = page.content.decode()
    assert page.status_code == 200 and "created" in body and "every 1s" not in body
    assert reverse("sessions_app:session_detail", args=[sid]) in body


def test_the_same_file_again_is_unchanged_never_a_second_session(owner, import_dir):
    data = session_bytes(str(uuid.uuid4()))
    first = post_import(client_for(owner), {"file": named(data)}, HTTP_HX_REQUEST="true")
    again = post_import(client_for(owner), {"file": named(data)}, HTTP_HX_REQUEST="true")
    assert "created" in first.content.decode() and "unchanged" in again.content.decode()
    assert Session.objects.filter(owner=owner).count() == 1


def test_a_malformed_file_fails_its_job_with_the_importers_message(owner, import_dir):
    response = post_import(client_for(owner), {"file": named(b"not json\n{also not\n")})
    assert response.status_code == 400
    body = response.content.decode()
    assert "Import failed" in body and "s.jsonl" in body
    job = Job.objects.get(kind="import", created_by=owner)
    assert job.status == "failed" and job.error and stored(import_dir) == []


def test_the_status_of_an_import_is_its_uploaders_alone(owner, make_user, import_dir):
    post_import(client_for(owner), {"file": named(session_bytes(str(uuid.uuid4())))})
    job = Job.objects.get(kind="import", created_by=owner)
    url = reverse("sessions_app:import_status", args=[job.pk])
    assert client_for(make_user("other")).get(url).status_code == 404
    assert Client().get(url).status_code == 302  # to the login page


def test_no_upload_without_login_or_csrf_token(owner, import_dir):
    data = session_bytes(str(uuid.uuid4()))
    assert post(Client(), data).status_code == 302
    client = client_for(owner, csrf=True)
    assert post(client, data).status_code == 403  # no CSRF cookie
    client.get(reverse("sessions_app:session_list"))  # now it has one, but sends no token:
    assert post(client, data).status_code == 403  # the body was read to look for it
    assert stored(import_dir) == [] and not Job.objects.exists()


def test_a_job_whose_stored_file_is_gone_says_so(owner, import_dir):
    response = post(client_for(owner), session_bytes(str(uuid.uuid4())))
    [path] = stored(import_dir)
    path.unlink()
    job = Job.objects.get(kind="import")
    assert run_job(job.pk) == "failed"
    page = client_for(owner).get(response["Location"])
    assert page.status_code == 400 and "upload it again" in page.content.decode()


def test_a_running_import_shows_how_far_it_is_and_keeps_polling_itself(owner):
    job = Job.objects.create(
        kind=Job.Kind.IMPORT,
        status=Job.Status.RUNNING,
        created_by=owner,
        params={"filename": "big.jsonl"},
        progress={"phase": "importing", "done": 300, "total": 1200},
    )
    url = reverse("sessions_app:import_status", args=[job.pk])
    body = client_for(owner).get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "importing… 25%" in body and 'data-import-state="importing"' in body
    # each row of a multi-file import polls and replaces only itself
    assert f'hx-get="{url}"' in body and 'hx-target="this" hx-swap="outerHTML"' in body


@pytest.fixture
def owner(make_user):
    return make_user("uploader")


def test_report_keeps_skipped_lines_and_warnings(owner, import_dir):
    sid = str(uuid.uuid4())
    lines = [json.dumps(header(sid)), "{broken", json.dumps(message("a1", "nowhere"))]
    response = post_import(
        client_for(owner), {"file": named(("\n".join(lines) + "\n").encode())}, HTTP_HX_REQUEST="1"
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "1 malformed line skipped" in body and "line 2" in body and "1 warning" in body
