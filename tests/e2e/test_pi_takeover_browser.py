"""Live takeover in a real browser: a followed session that pi is writing right now says
"pi is writing this session", keeps the chat disabled and offers a fork; once pi has been
quiet for PIWEB_PI_QUIET_SECONDS (5 s by default in the served process) the chat opens
again by itself, and the write-back switch is there."""

from __future__ import annotations

import os
import time

import pytest
from playwright.sync_api import expect

from sessions_app.models import Session
from sessions_app.services import following
from tests.support.pi_files import FOLLOWED_SID, append, chain_lines, session_file

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_pi_writing_disables_the_chat_until_pi_is_quiet(page_for, make_user, tmp_path):
    owner = make_user()
    path = session_file(tmp_path, 2, sid=FOLLOWED_SID)
    following.sync_file(str(path), owner)
    session = Session.objects.get(pi_id=FOLLOWED_SID)
    append(path, chain_lines(1, start=2)[0])  # pi writes now
    following.sync_file(str(path), owner)
    page = page_for(owner)
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    expect(page.locator("#pi-writing")).to_contain_text("pi is writing this session")
    expect(page.locator("#pi-fork-instead")).to_be_visible()
    expect(page.locator("#chat-send")).to_be_disabled()
    expect(page.locator("#chat-input")).to_be_disabled()
    assert str(path) in page.locator("#pi-file").inner_text()
    # pi goes quiet: the box stops saying so and the chat is usable again.
    quiet_at = os.stat(path).st_mtime + 5
    expect(page.locator("#pi-writing")).to_have_count(0, timeout=15000)
    assert time.time() >= quiet_at - 0.5
    expect(page.locator("#chat-send")).to_be_enabled()
    expect(page.locator("#chat-input")).to_be_enabled()
    # Fork instead, from a fresh write by pi.
    append(path, chain_lines(1, start=3)[0])
    following.sync_file(str(path), owner)
    expect(page.locator("#pi-writing")).to_be_visible(timeout=10000)
    page.click("#pi-fork-instead")
    page.wait_for_url(lambda url: session.pi_id not in url, timeout=15000)
    fork = Session.objects.get(parent=session)
    assert fork.source == Session.Source.FORK
    assert page.csp_violations == []
