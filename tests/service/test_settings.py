"""What piweb/settings.py and piweb/middleware.py promise: the Content-Security-Policy on
every response, a private secret key file, the static root."""

import os
import re
import stat
from pathlib import Path

import pytest
from django.test import Client

from tests.support.tree_data import import_branched
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db]


def test_every_page_carries_a_policy_that_allows_only_our_own_scripts(
    make_user, settings, fresh_workspace_root
):
    owner = make_user("csp-owner", is_staff=True, is_superuser=True)
    session = import_branched(owner, str(fresh_workspace_root))
    signed_in = client_for(owner)
    pages = [
        (Client(), "/login/"),
        (signed_in, "/"),
        (signed_in, f"/s/{session.pi_id}/"),
        (signed_in, "/admin/"),
        (signed_in, "/no-such-page/"),
    ]
    for client, url in pages:
        response = client.get(url)
        assert response["Content-Security-Policy"] == settings.PIWEB_CSP, url
    directives = dict(
        (part.split()[0], part.split()[1:]) for part in settings.PIWEB_CSP.split("; ")
    )
    assert directives["script-src"] == ["'self'"]  # no inline scripts, handlers or eval
    assert directives["object-src"] == ["'none'"] and directives["frame-ancestors"] == ["'none'"]
    # No page or partial relies on an inline script or handler (the policy blocks them).
    from sessions_app.services import sharing

    sharing.create_link(session, actor=owner, leaf_pi_id="e0000014")
    for url in (
        f"/s/{session.pi_id}/sharing/",
        f"/s/{session.pi_id}/",
        f"/s/{session.pi_id}/tree/",
        f"/s/{session.pi_id}/e/e0000014/",
        f"/s/{session.pi_id}/inspect/?leaf=e0000014",
    ):
        page = signed_in.get(url).content.decode()
        assert "data-select-all" in page or not url.endswith(("/e/e0000014/", "/sharing/"))
        assert not re.search(r'<script(?![^>]*(\bsrc=|type="application/json"))[^>]*>', page)
        assert not re.search(r"<[a-zA-Z][^<>]*\son[a-z]+=", page), url  # not escaped text


def test_the_secret_key_file_is_private_and_reused(tmp_path, monkeypatch):
    import piweb.settings as piweb_settings

    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.setattr(piweb_settings, "VAR_DIR", tmp_path)
    old_umask = os.umask(0)  # the file must be private even with a permissive umask
    try:
        key = piweb_settings._secret_key()
    finally:
        os.umask(old_umask)
    path = tmp_path / "secret_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(key) > 40 and piweb_settings._secret_key() == key
    # another process won the race: its key is used, not overwritten
    path.unlink()
    path.write_text("from-the-other-process\n")
    assert piweb_settings._secret_key() == "from-the-other-process"


def test_the_static_root_exists(settings):
    assert Path(settings.STATIC_ROOT).is_dir()
