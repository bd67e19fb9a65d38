"""sessions_app/rendering.py: model output is displayed, never executed."""

import re

import pytest

from sessions_app.rendering import (
    full_output_path,
    render_ansi,
    render_entry,
    render_image,
    render_json,
    render_llm_message,
    render_markdown,
)

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[x](javascript:alert(1))",
    '<a href="javascript:alert(1)">x</a>',
    "<iframe src=//evil></iframe>",
    '<svg onload="alert(1)"></svg>',
    "[y](JaVaScRiPt:alert(1))",
    "![i](javascript:alert(1))",
    '<div style="background:url(javascript:alert(1))">s</div>',
]


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_is_inert(text):
    html = str(render_markdown(text)).lower()
    tags = re.findall(r"<[a-z][^>]*>", html)  # real tags only (escaped text is &lt;…)
    assert not [t for t in tags if re.match(r"<(script|iframe|svg|img|style)", t)]
    assert not [t for t in tags if re.search(r"\son\w+\s*=", t)]
    assert not [t for t in tags if re.search(r"(href|src)\s*=\s*\"?\s*javascript", t)]
    assert not [t for t in tags if " style=" in t]


def test_markdown_renders_and_highlights():
    html = str(
        render_markdown("# Title\n\n**bold** [ok](https://example.com)\n\n```python\nx = 1\n```")
    )
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html
    assert 'href="https://example.com"' in html and 'rel="noopener noreferrer nofollow"' in html
    assert '<pre class="highlight">' in html and '<span class="n">x</span>' in html


def test_unknown_language_is_escaped_plain_code():
    html = str(render_markdown("```nosuchlang\n<b>x</b>\n```"))
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>" not in html


def test_ansi_becomes_classes_and_html_stays_text():
    html = str(render_ansi("\x1b[31mred\x1b[0m <script>alert(1)</script>"))
    assert '<span class="ansi31">red</span>' in html
    assert "&lt;script&gt;" in html and "<script>" not in html


def test_json_arguments_escaped():
    html = str(render_json({"command": "<script>x</script>"}))
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_images_only_whitelisted_base64():
    ok = str(render_image({"type": "image", "mimeType": "image/png", "data": "aGVsbG8="}))
    assert ok.startswith('<img class="entry-image" alt="image" src="data:image/png;base64,aGVsbG8=')
    assert "not shown" in str(render_image({"mimeType": "image/svg+xml", "data": "PHN2Zz4="}))
    assert "not shown" in str(render_image({"mimeType": "text/html", "data": "PGI+"}))
    bad = str(render_image({"mimeType": "image/png", "data": 'x" onerror="alert(1)'}))
    assert "onerror" not in bad and "invalid data" in bad


def test_entry_parts_for_each_kind():
    assistant = {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "hi"},
                {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}},
            ],
            "stopReason": "aborted",
        },
    }
    kinds = [p.kind for p in render_entry(assistant)]
    assert kinds == ["thinking", "markdown", "tool_call", "notice"]
    thinking = render_entry(assistant)[0]
    assert thinking.open is False  # thinking is collapsed
    result = {
        "type": "message",
        "message": {
            "role": "toolResult",
            "toolName": "bash",
            "content": [{"type": "text", "text": "line\n" * 100}],
            "details": {
                "truncation": {
                    "truncated": True,
                    "truncatedBy": "bytes",
                    "outputLines": 100,
                    "totalLines": 9000,
                },
                "fullOutputPath": "/tmp/out.log",
            },
            "isError": True,
        },
    }
    part = render_entry(result)[0]
    assert part.kind == "tool_result" and part.open is False  # long output collapsed
    assert part.extra["is_error"] and "showing 100 of 9000" in part.extra["notice"]
    assert part.extra["full_output"] == "/tmp/out.log"
    assert full_output_path(result) == "/tmp/out.log"
    compaction = {
        "type": "compaction",
        "summary": "## Goal\nx",
        "tokensBefore": 1000,
        "details": {"readFiles": ["a.py"], "modifiedFiles": ["b.py"]},
    }
    parts = render_entry(compaction)
    assert [p.kind for p in parts] == ["summary", "files"]
    assert parts[1].extra == {"read": ["a.py"], "modified": ["b.py"]}
    bash = {
        "type": "message",
        "message": {"role": "bashExecution", "command": "x", "output": "", "exitCode": 2},
    }
    part = render_entry(bash)[0]
    assert part.kind == "terminal" and "exit code 2" in part.extra["notes"]
    for other in (
        {"type": "label", "targetId": "a"},
        {"type": "model_change", "provider": "p", "modelId": "m"},
        {"type": "nonsense"},
    ):
        assert render_entry(other)


def test_llm_message_text_is_escaped():
    parts = render_llm_message({"role": "user", "content": [{"type": "text", "text": "<b>x</b>"}]})
    assert "<b>" not in str(parts[0].html)
