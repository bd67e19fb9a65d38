"""selectors/provenance.py: where a session comes from (followed, imported once, started
in piweb) and the `pi --session …` command that resumes it, on the session page."""

from __future__ import annotations

import io

import pytest

from sessions_app.models import Session
from sessions_app.services import following
from tests.support.pi_files import FOLLOWED_SID as SID
from tests.support.pi_files import chain_lines, header, line, session_file

pytestmark = [pytest.mark.embedded, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner(make_user):
    return make_user("follower")


def test_provenance_and_resume_command_on_the_session_page(tmp_path, owner, client):
    from django.urls import reverse

    from sessions_app.services import sessions
    from sessions_app.services.importer import import_jsonl_stream

    client.force_login(owner)
    # followed: the file's path, quoted for the shell, and the time of the last read
    path = tmp_path / "with space" / f"2026-01-01T00-00-00-000Z_{SID}.jsonl"
    path.parent.mkdir()
    path.write_bytes(line(header(SID)) + b"".join(chain_lines(2)))
    following.sync_file(str(path), owner)
    page = client.get(reverse("sessions_app:session_detail", args=[SID])).content.decode()
    assert "Followed live" in page and "last line read from disk" in page
    assert f"pi --session &#x27;{path}&#x27;" in page
    path.unlink()
    following.sync_file(str(path), owner)
    page = client.get(reverse("sessions_app:session_provenance", args=[SID])).content.decode()
    assert "file gone from disk" in page
    assert f"pi --session 2026-01-01T00-00-00-000Z_{SID}.jsonl" in page

    # uploaded once: the command refers to the JSONL export, named as pi names its files
    other = "0199aaaa-bbbb-7ccc-8ddd-0000000000ff"
    data = line(header(other)) + b"".join(chain_lines(1))
    import_jsonl_stream(io.BytesIO(data), owner, filename="upload.jsonl")
    page = client.get(reverse("sessions_app:session_detail", args=[other])).content.decode()
    assert "Imported once" in page
    name = f"2026-01-01T00-00-00-000Z_{other}.jsonl"
    assert f"pi --session {name}" in page and f'download="{name}"' in page
    response = client.get(reverse("sessions_app:export", args=[other, "jsonl"]))
    assert f'filename="{name}"' in response["Content-Disposition"]
    assert b"".join(response.streaming_content) == data

    made = sessions.create_session(owner=owner, cwd=str(tmp_path))
    page = client.get(reverse("sessions_app:session_detail", args=[made.pi_id])).content.decode()
    assert "Started in piweb" in page
    stamp = made.header_timestamp.replace(":", "-").replace(".", "-")
    assert f"pi --session {stamp}_{made.pi_id}.jsonl" in page


def test_a_session_imported_from_disk_resumes_from_its_file(tmp_path, owner):
    from django.core.management import call_command

    from sessions_app.selectors.provenance import session_provenance

    path = session_file(tmp_path, 1)
    call_command("import_pi_sessions", str(path), owner=owner.username, verbosity=0)
    session = Session.objects.get(pi_id=SID)
    provenance = session_provenance(session)
    assert (provenance.kind, provenance.path) == ("imported", str(path.resolve()))
    assert provenance.resume_command == f"pi --session {path.resolve()}"
