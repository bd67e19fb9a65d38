"""The write-back job (services/jobs/write_back.py): an entry added to a session followed
from a pi file queues one job, which the worker runs; the request or turn that added the
entry never writes pi's file itself."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from sessions_app.models import Entry, Job, Session
from sessions_app.services import following, sessions
from sessions_app.services.jobs import lifecycle
from sessions_app.services.jobs import write_back as write_back_job
from tests.support.pi_files import FOLLOWED_SID, run_write_backs, session_file
from tests.support.web import client_for

pytestmark = [
    pytest.mark.embedded,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("redis_ready", "tasks_stay_in_process"),
]


@pytest.fixture
def owner(make_user):
    return make_user()


@pytest.fixture(autouse=True)
def quiet(settings):
    settings.PIWEB_WRITE_BACK_DEFAULT = True
    settings.PIWEB_PI_QUIET_SECONDS = 0.0


def followed(tmp_path, owner) -> tuple[str, Session]:
    path = session_file(tmp_path, 2)
    assert following.sync_file(str(path), owner).action == "created"
    return str(path), Session.objects.get(pi_id=FOLLOWED_SID)


def file_ids(path) -> list[str]:
    with open(path, "rb") as fh:
        return [json.loads(raw)["id"] for raw in fh.read().splitlines()[1:]]


def queued(session) -> list[Job]:
    return list(
        Job.objects.filter(
            kind=Job.Kind.WRITE_BACK, status=Job.Status.QUEUED, params__session=session.pk
        )
    )


def test_a_chat_send_writes_pis_file_in_the_job_not_in_the_request(tmp_path, owner, workspace, llm):
    path, session = followed(tmp_path, owner)
    Session.objects.filter(pk=session.pk).update(cwd=str(workspace), model_profile="scripted")
    before = open(path, "rb").read()
    url = reverse("sessions_app:chat_send", args=[session.pi_id])
    response = client_for(owner).post(url, {"text": "from the browser"})
    assert response.status_code == 200, response.content.decode()
    sent = Entry.objects.get(session=session, role="user", seq=2)
    assert open(path, "rb").read() == before  # the request wrote nothing to pi's file
    (job,) = queued(session)
    assert lifecycle.run_job(job.pk) == Job.Status.DONE
    assert file_ids(path) == ["00000000", "00000001", sent.pi_id]
    assert following.sync_file(path, owner).action == "unchanged"


def test_one_queued_job_writes_what_several_entries_added(tmp_path, owner):
    path, session = followed(tmp_path, owner)
    first = sessions.append_entry(session, {"type": "session_info", "name": "one"})
    second = sessions.label_entry(session, "00000000", "two")
    assert len(queued(session)) == 1
    assert run_write_backs() == 1
    assert file_ids(path)[-2:] == [first.pi_id, second.pi_id]
    # The next entry queues a new job: the first one is done.
    third = sessions.append_entry(session, {"type": "session_info", "name": "three"})
    assert len(queued(session)) == 1 and run_write_backs() == 1
    assert file_ids(path)[-1] == third.pi_id


def test_no_job_for_a_session_that_does_not_write_back(tmp_path, owner, settings):
    settings.PIWEB_WRITE_BACK_DEFAULT = False
    path, session = followed(tmp_path, owner)
    sessions.append_entry(session, {"type": "session_info", "name": "kept here"})
    assert queued(session) == []
    assert file_ids(path) == ["00000000", "00000001"]


def test_the_job_of_a_deleted_session_is_cancelled(tmp_path, owner):
    path, session = followed(tmp_path, owner)
    sessions.append_entry(session, {"type": "session_info", "name": "then deleted"})
    (job,) = queued(session)
    Session.objects.filter(pk=session.pk).delete()
    assert lifecycle.run_job(job.pk) == Job.Status.CANCELLED
    assert file_ids(path) == ["00000000", "00000001"]


def test_a_write_back_that_must_wait_for_pi_is_marked_due(tmp_path, owner, settings):
    path, session = followed(tmp_path, owner)
    sessions.append_entry(session, {"type": "session_info", "name": "waits"})
    with open(path, "ab") as fh:
        fh.write(b'{"type":"message","id":"0000')  # pi is half way through a line
    (job,) = queued(session)
    assert lifecycle.run_job(job.pk) == Job.Status.DONE  # the job is done; the write waits
    session.refresh_from_db()
    assert session.settings["pi_file"]["due"] is True


def test_write_back_now_asks_the_worker_to_put_piwebs_leaf_last(tmp_path, owner):
    path, session = followed(tmp_path, owner)
    sessions.set_leaf(session, "00000000")
    url = reverse("sessions_app:pi_file_write_back", args=[session.pi_id])
    response = client_for(owner).post(url, {"action": "now"})
    assert response.status_code == 200 and "Writing back to" in response.content.decode()
    assert file_ids(path) == ["00000000", "00000001"]  # the request wrote nothing
    (job,) = queued(session)
    assert job.params["leaf_marker"] is True and job.created_by == owner
    assert lifecycle.run_job(job.pk) == Job.Status.DONE
    marker = Entry.objects.get(session=session, type="custom")
    assert marker.parent_pi_id == "00000000" and file_ids(path)[-1] == marker.pi_id


def test_a_waiting_job_takes_the_leaf_marker_asked_for_later(tmp_path, owner):
    path, session = followed(tmp_path, owner)
    added = sessions.append_entry(session, {"type": "session_info", "name": "one"})
    sessions.set_leaf(session, "00000001")
    assert write_back_job.write_back_now(session, actor=owner).action == "queued"
    (job,) = queued(session)
    assert job.params["leaf_marker"] is True
    assert run_write_backs() == 1
    ids = file_ids(path)
    assert ids[2] == added.pi_id and len(ids) == 4  # the entry, then the leaf marker
