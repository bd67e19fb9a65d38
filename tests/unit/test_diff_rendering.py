"""Diff tables: line numbers from the hunk headers, Pygments classes, escaped text."""

from sessions_app.core.file_changes import FileChange
from sessions_app.diff_rendering import rows

DIFF = (
    "diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n"
    "@@ -10,3 +10,3 @@ def f():\n a = 1\n-b = '<b>'\n+b = '<i>'\n c = 3\n"
)


def test_rows_number_lines_colour_code_and_escape_it():
    out = rows(FileChange(path="x.py", status="modified", diff=DIFF))
    assert [r["kind"] for r in out] == ["hunk", "ctx", "del", "add", "ctx"]
    assert [(r["old"], r["new"]) for r in out[1:]] == [(10, 10), (11, ""), ("", 11), (12, 12)]
    assert 'class="hl-' in out[2]["html"]
    assert "&lt;b&gt;" in out[2]["html"] and "<b>" not in out[2]["html"]
    assert "&lt;i&gt;" in out[3]["html"]


def test_an_unknown_file_type_is_plain_escaped_text():
    diff = "@@ -1 +1 @@\n-<script>\n+ok\n"
    out = rows(FileChange(path="notes.unknownext", status="modified", diff=diff))
    assert out[1]["html"].strip() == "&lt;script&gt;"
