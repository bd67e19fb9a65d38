"""The workspace views (sessions_app/views/workspace.py): "Continue in…", the pi-file
box and its write-back actions: who may use them, and what they answer."""

from __future__ import annotations

import io
import re
import shutil
import tarfile

import pytest
from django.urls import reverse

from sessions_app.models import Entry, Session
from sessions_app.services import following
from tests.support.access import Call, each, login_redirects, post, statuses
from tests.support.hostile_archives import link_chain_tar, link_chain_zip, pax_bomb
from tests.support.pi_files import FOLLOWED_SID, append, chain_lines, session_file
from tests.support.web import client_for
from tests.support.workspaces import area_of

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_workspace_root")]

READS = [Call("pi_file")]
CHANGES = [
    post("workspace_continue", {"kind": "empty", "name": "from-a-view"}),
    post("pi_file_write_back", {"action": "now"}),
]


def test_it_requires_login(shared):
    assert login_redirects(READS + CHANGES, shared.session) == each(READS + CHANGES, "/login/")


def test_it_requires_a_share_of_the_session(shared):
    strangers = statuses(client_for(shared.stranger), READS + CHANGES, shared.session)
    assert strangers == each(READS + CHANGES, 404)
    assert statuses(client_for(shared.viewer), READS, shared.session) == each(READS, 200)


def test_it_requires_editor_rights_to_choose_a_workspace_or_write_back(shared, settings):
    assert statuses(client_for(shared.viewer), CHANGES, shared.session) == each(CHANGES, 403)
    assert not Entry.objects.filter(session=shared.session, type="custom").exists()
    assert not (area_of(settings, shared.viewer) / "from-a-view").exists()


def test_an_editor_chooses_a_folder_of_their_own(shared, settings):
    url = reverse("sessions_app:workspace_continue", args=[shared.session.pi_id])
    response = client_for(shared.editor).post(url, {"kind": "empty", "name": "editors"})
    assert response.status_code == 200
    choice = Entry.objects.get(session=shared.session, type="custom").payload["data"]
    assert choice["cwd"] == str(area_of(settings, shared.editor) / "editors")
    assert choice["by"] == shared.editor.pk


def test_a_hostile_archive_upload_is_refused_with_a_notice(shared, settings):
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        info = tarfile.TarInfo("/etc/cron.d/evil")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    data.seek(0)
    data.name = "evil.tar.gz"
    url = reverse("sessions_app:workspace_continue", args=[shared.session.pi_id])
    response = client_for(shared.owner).post(
        url, {"kind": "archive", "name": "evil", "archive": data}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 400
    assert "absolute path" in response.content.decode()
    assert not (area_of(settings, shared.owner) / "evil").exists()


@pytest.mark.django_db(transaction=True)
def test_the_pi_file_box_says_pi_is_writing_and_offers_a_fork(make_user, tmp_path, settings):
    settings.PIWEB_PI_QUIET_SECONDS = 60.0
    owner = make_user()
    path = session_file(tmp_path, 2)
    following.sync_file(str(path), owner)
    session = Session.objects.get(pi_id=FOLLOWED_SID)
    append(path, chain_lines(1, start=2)[0])
    following.sync_file(str(path), owner)
    page = client_for(owner).get(reverse("sessions_app:pi_file", args=[session.pi_id]))
    html = page.content.decode()
    assert "pi is writing this session" in html and 'id="pi-fork-instead"' in html
    # It polls while pi writes, besides following the session's events.
    assert re.search(r'id="pi-file"[^>]*hx-trigger="[^"]*, every 2s"', html)
    send = client_for(owner).post(
        reverse("sessions_app:chat_send", args=[session.pi_id]), {"text": "hello"}
    )
    assert send.status_code == 400 and "pi is writing this session" in send.content.decode()
    settings.PIWEB_PI_QUIET_SECONDS = 0.0
    quiet = client_for(owner).get(reverse("sessions_app:pi_file", args=[session.pi_id]))
    assert "pi is writing" not in quiet.content.decode()
    assert "every 2s" not in quiet.content.decode()


@pytest.mark.django_db(transaction=True)
def test_only_the_owner_turns_write_back_on_or_off(make_user, tmp_path, settings):
    settings.PIWEB_PI_QUIET_SECONDS = 0.0
    settings.PIWEB_WRITE_BACK_DEFAULT = False
    owner, editor = make_user(), make_user()
    path = session_file(tmp_path, 2)
    following.sync_file(str(path), owner)
    session = Session.objects.get(pi_id=FOLLOWED_SID)
    from tests.support.web import share

    share(session, editor, "editor")
    url = reverse("sessions_app:pi_file_write_back", args=[session.pi_id])
    refused = client_for(editor).post(url, {"action": "on"})
    assert refused.status_code == 403
    session.refresh_from_db()
    assert "pi_file" not in (session.settings or {})
    size = path.stat().st_size
    assert client_for(owner).post(url, {"action": "on"}).status_code == 200
    session.refresh_from_db()
    assert session.settings["pi_file"]["write_back"] is True
    assert path.stat().st_size == size  # nothing was missing from the file
    # An editor may write back now once it is on.
    assert client_for(editor).post(url, {"action": "now"}).status_code == 200


# --- archives an attacker uploads through the page (issue 33, E, F, G) -------------------


def _upload_archive(user, session, name: str, data: bytes, filename: str = "a.tar.gz"):
    fileobj = io.BytesIO(data)
    fileobj.name = filename
    url = reverse("sessions_app:workspace_continue", args=[session.pi_id])
    return client_for(user).post(
        url, {"kind": "archive", "name": name, "archive": fileobj}, HTTP_HX_REQUEST="true"
    )


def _zeros_tar(size: int) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        info = tarfile.TarInfo("zeros.bin")
        info.size = size
        tar.addfile(info, io.BytesIO(bytes(size)))
    return data.getvalue()


def test_small_archives_that_add_up_past_the_quota_are_refused_once_it_is_reached(shared, settings):
    """Six 46 KB archives unpacked to 282 MB against a 200 MB quota; here, 1 MB: the
    third 400 KB archive no longer fits what is left."""
    settings.PIWEB_WORKSPACE_QUOTA_MB = 1
    archive = _zeros_tar(400 << 10)
    assert len(archive) < 2_000
    area = area_of(settings, shared.owner)
    for name in ("one", "two"):
        assert _upload_archive(shared.owner, shared.session, name, archive).status_code == 200
        assert (area / name / "zeros.bin").stat().st_size == 400 << 10
    refused = _upload_archive(shared.owner, shared.session, "three", archive)
    assert refused.status_code == 400
    text = refused.content.decode()
    assert "what is left of your workspace quota of 1.0MB" in text, text
    assert not (area / "three").exists()
    # Deleting makes room again.
    shutil.rmtree(area / "one")
    assert _upload_archive(shared.owner, shared.session, "four", archive).status_code == 200


def test_an_archive_is_bounded_by_the_unpacked_limit_without_a_quota(shared, settings):
    settings.PIWEB_WORKSPACE_QUOTA_MB = 0
    settings.PIWEB_WORKSPACE_UNPACKED_MAX_MB = 1
    refused = _upload_archive(shared.owner, shared.session, "big", _zeros_tar(2 << 20))
    assert refused.status_code == 400
    assert "PIWEB_WORKSPACE_UNPACKED_MAX_MB" in refused.content.decode()


def test_a_pax_header_bomb_and_a_link_chain_are_refused_through_the_page(
    shared, settings, tmp_path
):
    bomb = tmp_path / "pax.tgz"
    declared = pax_bomb(bomb, 64 << 20)
    response = _upload_archive(shared.owner, shared.session, "pax", bomb.read_bytes())
    assert response.status_code == 400
    assert f"a PAX header of {declared:,} bytes" in response.content.decode()
    for name, data, filename in (
        ("chain", link_chain_tar(), "c.tar.gz"),
        ("zchain", link_chain_zip(), "c.zip"),
    ):
        response = _upload_archive(shared.owner, shared.session, name, data, filename)
        assert response.status_code == 400
        assert "leads outside through other links" in response.content.decode()
        assert not (area_of(settings, shared.owner) / name).exists()
