"""Every page stays bounded whatever the session holds (docs/operations.md, "Limits of a page").

Small limits are set through the settings so that modest data shows the behaviour:
previews cut to PIWEB_PREVIEW_CHARS with a lazy "show more" and a raw download, the
inspector's impossible working directory, JSON and content-block caps, clipped header
fields, the Markdown export's clip and the hard per-response cap. The 50 MB version
runs under a 2 GB address-space cap in tests/e2e/test_page_memory_cap.py.
"""

import json

import pytest

from sessions_app.rendering import json_head, render_json
from sessions_app.services import sessions
from tests.support.branchy_session import user

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_limits(settings):
    settings.PIWEB_PREVIEW_CHARS = 1000
    settings.PIWEB_SHOW_MORE_CHARS = 20_000
    return settings


def make_session(owner, cwd="/work/p", text="hello"):
    session = sessions.create_session(owner=owner, cwd=cwd, name="big")
    entry = sessions.append_entry(session, user(text))
    session.refresh_from_db()
    return session, entry


def test_entry_pane_shows_a_preview_and_the_rest_lazily_in_bounded_windows(
    client, make_user, small_limits
):
    owner = make_user()
    text = "".join(f"line {i:06d} <b>x</b>\n" for i in range(3000))  # ~66,000 chars
    session, entry = make_session(owner, text=text)
    client.force_login(owner)
    pane = client.get(f"/s/{session.pi_id}/e/{entry.pi_id}/")
    body = pane.content.decode()
    assert pane.status_code == 200 and len(body) < 30_000
    assert "more characters not shown" in body and "Show the whole text" in body
    assert f"/s/{session.pi_id}/e/{entry.pi_id}/raw/" in body
    assert "line 002999" not in body

    # "show more": windows of PIWEB_SHOW_MORE_CHARS, escaped, chained until the end
    url, got, start = f"/s/{session.pi_id}/e/{entry.pi_id}/text/", [], 0
    for _ in range(10):
        window = client.get(url, {"from": start}, HTTP_HX_REQUEST="true")
        part = window.content.decode()
        assert window.status_code == 200 and len(part) < 2 * 20_000 + 2_000
        assert "<b>x</b>" not in part and "&lt;b&gt;x&lt;/b&gt;" in part
        got.append(part)
        if "End of the text" in part:
            break
        start += 20_000
        assert f"?from={start}" in part
    assert len(got) == 4 and "line 002999" in got[-1]

    # the whole entry, as stored, as a streamed download
    raw = client.get(f"/s/{session.pi_id}/e/{entry.pi_id}/raw/")
    assert raw.streaming and raw["Content-Disposition"].startswith("attachment")
    assert b"".join(raw.streaming_content).decode() == entry.line


def test_small_entries_offer_no_show_more(client, make_user, small_limits):
    owner = make_user()
    session, entry = make_session(owner, text="short")
    client.force_login(owner)
    body = client.get(f"/s/{session.pi_id}/e/{entry.pi_id}/").content.decode()
    assert "Show the whole text" not in body and "not shown" not in body


def test_an_entry_with_thousands_of_blocks_renders_a_bounded_number(client, make_user):
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd="/w", name="blocks")
    blocks = [{"type": "text", "text": f"block {i}"} for i in range(2000)]
    entry = sessions.append_entry(
        session, {"type": "message", "message": {"role": "user", "content": blocks}}
    )
    client.force_login(owner)
    body = client.get(f"/s/{session.pi_id}/e/{entry.pi_id}/").content.decode()
    assert "block 99<" in body and "block 100<" not in body
    assert "1,900 more content blocks not shown" in body


class CountedItems(dict):
    """A JSON object that counts how many objects the encoder opened (in `opened`)."""

    opened = [0]

    def items(self):
        self.opened[0] += 1
        return super().items()


def test_json_is_pretty_printed_only_up_to_the_limit():
    huge = {"items": [CountedItems(n=i, text="x" * 50) for i in range(200_000)]}  # ~14 MB
    head, cut = json_head(huge, 5_000)
    assert cut and len(head) == 5_000 and head.startswith('{\n  "items": [')
    assert CountedItems.opened[0] < 100  # the whole document is never encoded
    html = str(render_json(huge, 5_000))
    assert "the rest of this JSON is not shown" in html
    assert CountedItems.opened[0] < 200
    assert json_head({"a": 1}, 5_000) == ('{\n  "a": 1\n}', False)


def test_inspector_does_not_walk_an_impossible_working_directory(client, make_user, settings):
    """A cwd far longer than any real path: walking its ancestors to find AGENTS.md and
    skills cost the square of its length (a 10 MB cwd grew the server to 22.7 GB)."""
    settings.PIWEB_EXACT_TOKEN_CHARS = 50_000
    owner = make_user()
    session, entry = make_session(owner, cwd="/a" * 150_000, text="y" * 80_000)
    client.force_login(owner)
    response = client.get(f"/s/{session.pi_id}/inspect/")  # (it never finished before)
    body = response.content.decode()
    assert response.status_code == 200
    assert "no project context files or skills were looked up" in body
    assert "partly estimated" in body and "≈" in body
    assert len(body) < 120_000  # the 300,000-character prompt is shown cut


def test_header_fields_are_clipped_on_every_page_that_shows_them(client, make_user):
    owner = make_user()
    session, entry = make_session(owner, cwd="/" + "c" * 200_000)
    client.force_login(owner)
    from sessions_app.services import sharing

    link = sharing.create_link(session, actor=owner, leaf_pi_id=entry.pi_id)
    for url in (
        "/",
        f"/s/{session.pi_id}/",
        f"/l/{link.token}/",
        f"/s/{session.pi_id}/export/html/",
        f"/s/{session.pi_id}/export/md/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert len(response.content) < 150_000, (url, len(response.content))
        assert "c" * 250 in response.content.decode(), url  # (the start is shown)


def test_markdown_export_clips_huge_messages(client, make_user):
    owner = make_user()
    session, entry = make_session(owner, text="m" * 1_000_000)
    client.force_login(owner)
    md = client.get(f"/s/{session.pi_id}/export/md/").content.decode()
    assert len(md) < 250_000 and "800,000 more characters" in md


def test_a_page_over_the_response_cap_is_replaced_by_a_notice(client, make_user, settings):
    owner = make_user()
    session, entry = make_session(owner, text="z" * 30_000)
    settings.PIWEB_MAX_RESPONSE_BYTES = 20_000
    client.force_login(owner)
    pane = client.get(f"/s/{session.pi_id}/e/{entry.pi_id}/")
    assert pane.status_code == 200 and int(pane["X-Piweb-Response-Cut"]) > 20_000
    assert "This page is too large to show" in pane.content.decode()
    assert len(pane.content) < 2_000
    # downloads are not pages: the export stays whole
    export = client.get(f"/s/{session.pi_id}/export/jsonl/")
    lines = b"".join(export.streaming_content).decode().splitlines()
    assert json.loads(lines[1])["message"]["content"] == "z" * 30_000


def test_long_branches_render_their_newest_entries_within_the_page_budget(
    client, make_user, settings
):
    settings.PIWEB_PREVIEW_CHARS = 1000
    settings.PIWEB_MAX_RESPONSE_BYTES = 200_000  # a page budget of 100,000 characters
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd="/w", name="long")
    for i in range(120):
        sessions.append_entry(session, user(f"message {i:03d} " + "w" * 3000))
    session.refresh_from_db()
    from sessions_app.services import sharing

    link = sharing.create_link(session, actor=owner, leaf_pi_id=session.leaf.pi_id)
    client.force_login(owner)
    transcript = client.get(f"/s/{session.pi_id}/chat/transcript/").content.decode()
    assert "message 119" in transcript and "message 000" not in transcript
    assert "earlier entries on this branch not shown" in transcript
    assert len(transcript) < 120_000
    page = client.get(f"/l/{link.token}/").content.decode()
    assert "message 119 " in page and "Not shown on this page" in page
    assert "X-Piweb-Response-Cut" not in client.get(f"/l/{link.token}/")
    # the download holds the whole branch
    export = client.get(f"/s/{session.pi_id}/export/html/").content.decode()
    assert "message 000" in export and "Not shown on this page" not in export


def test_markdown_stops_at_the_request_deadline_and_the_rest_is_plain_text(
    client, make_user, settings
):
    """20,000 characters of `![` cost markdown-it seconds: 100 such blocks were minutes."""
    settings.PIWEB_RENDER_SECONDS = 1
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd="/w", name="slow")
    blocks = [{"type": "text", "text": f"**block {i}** " + "![" * 10_000} for i in range(100)]
    entry = sessions.append_entry(
        session, {"type": "message", "message": {"role": "user", "content": blocks}}
    )
    client.force_login(owner)
    body = client.get(f"/s/{session.pi_id}/e/{entry.pi_id}/").content.decode()
    assert "<strong>block 0</strong>" in body  # rendered while time was left
    assert '<pre class="plain">**block 99** ![![' in body  # plain text after the deadline
    settings.PIWEB_RENDER_SECONDS = 0
    short = sessions.append_entry(session, user("**bold**"))
    plain = client.get(f"/s/{session.pi_id}/e/{short.pi_id}/").content.decode()
    assert '<pre class="plain">**bold**</pre>' in plain and "<strong>bold" not in plain


def test_inspector_offers_the_rest_of_a_cut_message_lazily(client, make_user, small_limits):
    owner = make_user()
    text = "".join(f"line {i:06d}\n" for i in range(3000))  # ~36,000 chars
    session, entry = make_session(owner, text=text)
    small = sessions.append_entry(session, user("a short question"))
    client.force_login(owner)
    body = client.get(f"/s/{session.pi_id}/inspect/", {"leaf": small.pi_id}).content.decode()
    assert "line 002999" not in body and "more characters not shown" in body
    # the big message offers its entry's text windows and download; the short one does not
    assert body.count("Show the whole text") == 1
    assert f"/s/{session.pi_id}/e/{entry.pi_id}/text/" in body
    assert f"/s/{session.pi_id}/e/{entry.pi_id}/raw/" in body
    assert f"/s/{session.pi_id}/e/{small.pi_id}/text/" not in body
