"""Markdown that carries no raw HTML, whatever the session's text held.

A Markdown export is opened in viewers that render raw HTML (a `<script>` or an
`<img onerror>` in a message would run there). `escape_raw_html(text)` finds, with a
CommonMark parser (markdown-it-py, the one the entry pane uses), every line where the
document holds raw HTML and writes its `<` as `&lt;`: the text reads the same and no tag
is left. Code blocks are code, not HTML, so they stay as they are.

Escaping a line can change how the lines after it parse (an HTML block that becomes a
paragraph absorbs a following indented line), so it parses again until nothing is left;
after `MAX_PASSES`, or for a document longer than `MAX_PARSED_CHARS` (the parser reads
a few hundred KB a second), it escapes every `<` (code then shows `&lt;`, safely).

Pure: no Django.
"""

from __future__ import annotations

from functools import lru_cache

from markdown_it import MarkdownIt

MAX_PASSES = 8
MAX_PARSED_CHARS = 1_000_000

# HTML the export writes itself around tool output (`core.exports.branch_markdown`).
ALLOWED_HTML = frozenset({"<details><summary>output</summary>", "</details>"})


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True})
    md.enable("table")
    md.enable("strikethrough")
    return md


def _html_lines(lines: list[str]) -> set[int]:
    """Indexes of the lines that hold raw HTML (blocks, or paragraphs with inline HTML)."""
    found: set[int] = set()
    block_map = None
    for token in _parser().parse("\n".join(lines)):
        if token.map is not None:
            block_map = token.map
        span = token.map or block_map
        if span is None:
            continue
        if token.type == "html_block":
            if token.content.strip() not in ALLOWED_HTML:
                found.update(range(span[0], span[1]))
        elif token.type == "inline" and any(
            child.type == "html_inline" for child in token.children or ()
        ):
            found.update(range(span[0], span[1]))
    return found


def escape_raw_html(text: str) -> str:
    """`text` (Markdown) with every line holding raw HTML escaped (see the module doc)."""
    if "<" not in text:
        return text
    lines = text.split("\n")
    if len(text) <= MAX_PARSED_CHARS:
        for _ in range(MAX_PASSES):
            found = [i for i in _html_lines(lines) if "<" in lines[i]]
            if not found:
                return "\n".join(lines)
            for i in found:
                lines[i] = lines[i].replace("<", "&lt;")
    return "\n".join(line if line in ALLOWED_HTML else line.replace("<", "&lt;") for line in lines)
