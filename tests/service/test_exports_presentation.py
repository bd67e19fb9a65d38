"""presentation/exports.py: self-contained HTML (no external references), Markdown of one
branch, and pi JSONL beside them. (`manage.py export_session` is tested in
test_export_session_command.py, the export view in views/test_exports_views.py.)"""

from __future__ import annotations

import re

import pytest

from sessions_app.core.jsonl import read_session
from sessions_app.presentation import exports
from sessions_app.selectors import exporter
from sessions_app.services import sessions
from tests.support.branchy_session import build_branchy_session, user
from tests.support.usage_data import import_costly

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
def test_markdown_and_jsonl(make_user):
    owner = make_user()
    data = build_branchy_session(owner)
    md = exports.export_markdown(data.session, data.ids["b3"])
    assert md.startswith("# Parser fix\n")
    assert "## User" in md and "**Tool call** `$ " in md and "(error)" in md  # its headline
    assert "Fixed the parser" not in md
    text = exporter.export_jsonl(data.session)
    parsed = read_session([text])
    assert parsed.header["id"] == data.session.pi_id
    assert [e["id"] for e in parsed.entries] == list(
        data.session.entries.order_by("seq").values_list("pi_id", flat=True)
    )


@pytest.mark.embedded
def test_offline_html_export_carries_usage_and_the_context_as_tables(make_user):
    from sessions_app.presentation.exports import export_html

    session = import_costly(make_user("owner5"))
    html = export_html(session)
    assert 'id="export-usage"' in html
    assert '<tr data-key="anthropic/claude-opus-4-5">' in html
    assert html.count('<tr class="turn"') == 3 and html.count('<tr class="compaction"') == 1
    assert "uPlot" not in html  # no chart library in the offline file: tables only
    early = export_html(session, "e0000003")
    assert '<tr data-key="anthropic/claude-opus-4-5">' not in early  # this branch only
