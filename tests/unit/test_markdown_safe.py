"""core/markdown_safe.py: Markdown from a session comes out with no raw HTML (no script,
no event handler, no javascript: link written as a tag), reads the same once rendered,
and keeps its code and the export's own fold as they are."""

from __future__ import annotations

import pytest

from sessions_app.core import markdown_safe
from sessions_app.core.markdown_safe import escape_raw_html
from tests.support.hostile_markdown import HOSTILE_MARKDOWN, rendered_tags

TAGS = ("<script", "<img", "<iframe", "<div", "<a ", "<style", "<svg", "<b>", "<!--")


@pytest.mark.parametrize("text", HOSTILE_MARKDOWN)
def test_escaped_markdown_has_no_raw_html(text):
    html = rendered_tags(escape_raw_html(text))
    for tag in ("<script", "<img", "<iframe", "<div"):
        assert tag not in html, html


@pytest.mark.parametrize("text", HOSTILE_MARKDOWN)
def test_markdown_too_long_to_parse_has_every_tag_escaped(text, monkeypatch):
    monkeypatch.setattr(markdown_safe, "MAX_PARSED_CHARS", 10)
    html = rendered_tags(escape_raw_html("```\n<b>\n```\n" + text))
    for tag in ("<script", "<img", "<iframe", "<div", "<b>"):
        assert tag not in html, html


def test_escaped_markdown_keeps_code_blocks_as_code():
    text = "Use `Vec<T>` here.\n\n```rust\nlet v: Vec<u8> = x << 2;\n```\n\n    <indented code>\n"
    assert escape_raw_html(text) == text


MORE_HOSTILE = [
    '<a href="javascript:alert(1)">click</a>',
    'see <a href="javascript:alert(1)">this</a> link',
    "<SCRIPT>alert(1)</SCRIPT>",
    "<style>body{display:none}</style>",
    "<!-- hidden --><script>alert(1)</script>",
    "a <b\nonclick=alert(1)>tag over two lines</b>",
    "<svg onload=alert(1)></svg>",
    "# Title <img src=x onerror=alert(1)>",
    "<details><summary>output</summary><script>alert(1)</script>",  # not the export's own
]


@pytest.mark.parametrize("text", MORE_HOSTILE)
def test_links_handlers_and_tags_in_any_case_or_place_are_escaped(text):
    html = rendered_tags(escape_raw_html(text))
    for tag in TAGS:
        assert tag not in html.lower(), html


def test_escaped_text_reads_the_same_once_rendered():
    text = 'Try <script>alert("x")</script> and <b>bold</b>.'
    escaped = escape_raw_html(text)
    assert "<" not in escaped.replace("&lt;", "")
    html = rendered_tags(escaped)
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; and &lt;b&gt;bold&lt;/b&gt;" in html


def test_markdown_links_are_left_to_the_viewers_link_policy():
    """Markdown link syntax holds no raw HTML, so it is not rewritten: a CommonMark viewer
    refuses a javascript: target itself (it renders the link as text)."""
    text = "[x](javascript:alert(1)) and <javascript:alert(2)>"
    assert escape_raw_html(text) == text
    assert "href" not in rendered_tags(text)
    assert 'href="https://example.com/"' in rendered_tags(
        escape_raw_html("[ok](https://example.com/) <https://example.com/>")
    )


def test_the_exports_own_fold_stays_html():
    text = "<details><summary>output</summary>\n\n```\nout <b>\n```\n\n</details>\n"
    assert escape_raw_html(text) == text
    assert "<details><summary>output</summary>" in rendered_tags(text)


def test_text_without_a_tag_comes_back_unchanged():
    text = "plain *markdown* with a < b and 3 > 2\n\n- list\n"
    assert escape_raw_html(text) == text
    assert escape_raw_html("no angle brackets at all") == "no angle brackets at all"


def test_when_passes_run_out_every_tag_outside_the_fold_is_escaped(monkeypatch):
    monkeypatch.setattr(markdown_safe, "MAX_PASSES", 0)
    text = "<details><summary>output</summary>\n`a<b`\n<script>x</script>\n</details>"
    assert escape_raw_html(text) == (
        "<details><summary>output</summary>\n`a&lt;b`\n&lt;script>x&lt;/script>\n</details>"
    )
