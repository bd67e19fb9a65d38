"""Markdown carrying raw HTML, and the HTML a viewer that allows raw HTML makes of it
(for core/markdown_safe.py and the Markdown export that uses it)."""

from markdown_it import MarkdownIt


def rendered_tags(markdown: str) -> str:
    """The HTML a Markdown viewer that allows raw HTML would produce."""
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


HOSTILE_MARKDOWN = [
    "<script>alert(1)</script>",
    "text <img src=x onerror=alert(1)> more",
    "<div>\n<script>alert(2)</script>\n</div>",
    "<script>\nx\n</script>\n    <img src=x onerror=alert(3)>",  # absorbed once escaped
    "- item\n\n  ```\n<script>alert(4)</script>\n```",  # fence ends with the list item
    "\\`<script>alert(5)</script>`",
    "| a | b |\n|---|---|\n| <img src=x onerror=alert(6)> | c |",
    "> <iframe src=//evil></iframe>",
]
