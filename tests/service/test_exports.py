"""Exports: self-contained HTML (no external references), Markdown of one branch, pi JSONL;
from the web and from `manage.py export_session`."""

import json
import re

import pytest
from django.core.management import CommandError, call_command

from sessions_app.core.jsonl import read_session
from sessions_app.presentation import exports
from sessions_app.selectors import exporter
from sessions_app.services import sessions
from tests.support.branchy_session import build_branchy_session, user

pytestmark = pytest.mark.django_db

EXTERNAL = re.compile(
    r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|@import|url\(\s*["']?(?:https?:)?//""", re.I
)


@pytest.mark.embedded
def test_html_export_is_self_contained_and_shows_the_branch(make_user):
    owner = make_user()
    data = build_branchy_session(owner)
    sessions.append_entry(
        data.session,
        user(
            "Look: <script>alert(1)</script> and ![x](https://evil.example/i.png) [link](https://example.com)"
        ),
        parent_pi_id=data.ids["a3"],
    )
    leaf = data.session.entries.order_by("-seq").first().pi_id
    html = exports.export_html(data.session, leaf)
    assert "<script>alert(1)</script>" not in html
    assert not EXTERNAL.search(html.replace('href="https://example.com"', "")), EXTERNAL.search(
        html
    )
    assert "<link" not in html and '<img src="http' not in html
    assert "Fixed the parser. All tests pass." in html
    assert f'id="e-{data.ids["b3"]}"' not in html  # other branch: only in the tree sidebar
    assert f'data-entry-id="{data.ids["b3"]}"' in html
    assert "<details" in html and "Content-Security-Policy" in html


@pytest.mark.embedded
def test_markdown_and_jsonl(make_user, tmp_path):
    owner = make_user()
    data = build_branchy_session(owner)
    md = exports.export_markdown(data.session, data.ids["b3"])
    assert md.startswith("# Parser fix\n")
    assert "## User" in md and "**Tool call `bash`**" in md and "(error)" in md
    assert "Fixed the parser" not in md
    text = exporter.export_jsonl(data.session)
    parsed = read_session([text])
    assert parsed.header["id"] == data.session.pi_id
    assert [e["id"] for e in parsed.entries] == list(
        data.session.entries.order_by("seq").values_list("pi_id", flat=True)
    )
    out = tmp_path / "s.html"
    call_command(
        "export_session",
        data.session.pi_id,
        "--format",
        "html",
        "--leaf",
        data.ids["a3"],
        "-o",
        str(out),
    )
    assert "Fixed the parser" in out.read_text()
    call_command("export_session", data.session.pi_id, "--format", "md", "-o", str(tmp_path))
    assert list(tmp_path.glob("*.md"))
    with pytest.raises(CommandError):
        call_command("export_session", "nope", "--format", "md")
    with pytest.raises(CommandError):
        call_command("export_session", data.session.pi_id, "--format", "md", "--leaf", "zzz")


def test_export_views(client, make_user):
    owner = make_user()
    data = build_branchy_session(owner)
    client.force_login(owner)
    base = f"/s/{data.session.pi_id}/export/"
    html = client.get(base + "html/", {"leaf": data.ids["a3"]})
    assert html.status_code == 200
    assert html["Content-Disposition"].startswith("attachment;")
    assert html["Content-Type"].startswith("text/html")
    jsonl = client.get(base + "jsonl/")
    assert jsonl.streaming  # never the whole file in memory
    first = json.loads(b"".join(jsonl.streaming_content).decode().splitlines()[0])
    assert first["type"] == "session" and first["id"] == data.session.pi_id
    assert client.get(base + "pdf/").status_code == 400
    assert client.get(base + "md/", {"leaf": "zzz"}).status_code == 400
