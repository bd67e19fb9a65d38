"""The edit tool's ``edits[]``: pi 0.80.2's rules, run for real on a temporary workspace.

Every ``oldText`` is matched against the ORIGINAL file, once and only once; regions may
not overlap; all replacements apply together or none does; the file's line ending and
byte-order mark are kept (pi: the BOM is set aside before matching, the text is matched
with LF line endings and written back with the file's first line ending); the result
says how many blocks were replaced and carries a diff.
"""

import pytest

from sessions_app.agent import edits as edit_text
from sessions_app.agent.paths import Workspace
from sessions_app.agent.tools import ToolContext, execute_tool

ORIGINAL = "alpha = 1\nbeta = 2\ngamma = 3\ndelta = 4\n"


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def ctx(ws, tmp_path):
    return ToolContext(Workspace(str(ws)), str(tmp_path / "artifacts"), bash_timeout=30)


def edit(ctx, path, *pairs, **extra):
    args = {"path": path, "edits": [{"oldText": o, "newText": n} for o, n in pairs], **extra}
    return execute_tool("edit", args, ctx)


def test_several_regions_change_at_once(ctx, ws):
    (ws / "f.py").write_text(ORIGINAL)
    result = edit(ctx, "f.py", ("alpha = 1", "alpha = 10"), ("delta = 4", "delta = 40"))
    assert not result.is_error, result.text
    assert result.text == "Successfully replaced 2 block(s) in f.py."
    assert (ws / "f.py").read_text() == "alpha = 10\nbeta = 2\ngamma = 3\ndelta = 40\n"
    details = result.details
    assert details["firstChangedLine"] == 1
    assert details["diff"].split("\n") == [
        "-1 alpha = 1",
        "+1 alpha = 10",
        " 2 beta = 2",
        " 3 gamma = 3",
        "-4 delta = 4",
        "+4 delta = 40",
    ]
    assert details["patch"].startswith("--- f.py\n+++ f.py\n@@ -1,4 +1,4 @@\n")


def test_edits_are_matched_against_the_original_not_one_after_the_other(ctx, ws):
    # The second oldText exists only in the ORIGINAL text; the first edit's newText
    # would create another "beta" that a sequential application would have to face.
    (ws / "f.py").write_text(ORIGINAL)
    result = edit(ctx, "f.py", ("alpha = 1", "beta = 1"), ("beta = 2", "b = 2"))
    assert not result.is_error, result.text
    assert (ws / "f.py").read_text() == "beta = 1\nb = 2\ngamma = 3\ndelta = 4\n"


def test_an_overlap_is_refused_and_nothing_is_written(ctx, ws):
    (ws / "f.py").write_text(ORIGINAL)
    result = edit(ctx, "f.py", ("beta = 2\ngamma", "B"), ("gamma = 3", "G"))
    assert result.is_error
    assert "edits[0] and edits[1] overlap in f.py" in result.text
    nested = edit(ctx, "f.py", ("beta = 2\ngamma = 3", "B"), ("gamma", "G"))
    assert nested.is_error and "overlap" in nested.text
    assert (ws / "f.py").read_text() == ORIGINAL


def test_a_missing_match_is_refused_and_nothing_is_written(ctx, ws):
    (ws / "f.py").write_text(ORIGINAL)
    result = edit(ctx, "f.py", ("alpha = 1", "alpha = 10"), ("epsilon", "E"))
    assert result.is_error
    assert result.text.startswith("edits[1].oldText was not found in f.py.")
    single = edit(ctx, "f.py", ("epsilon", "E"))
    assert single.is_error and single.text.startswith("oldText was not found in f.py.")
    assert (ws / "f.py").read_text() == ORIGINAL


def test_a_match_that_is_not_unique_is_refused(ctx, ws):
    (ws / "f.py").write_text("x = 1\nx = 1\ny = 2\n")
    result = edit(ctx, "f.py", ("y = 2", "y = 3"), ("x = 1", "x = 2"))
    assert result.is_error
    assert result.text.startswith("edits[1].oldText occurs 2 times in f.py")
    assert (ws / "f.py").read_text() == "x = 1\nx = 1\ny = 2\n"


def test_empty_old_text_no_change_and_no_edits_are_refused(ctx, ws):
    (ws / "f.py").write_text(ORIGINAL)
    assert edit(ctx, "f.py", ("", "x")).is_error
    same = edit(ctx, "f.py", ("beta = 2", "beta = 2"))
    assert same.is_error and "unchanged" in same.text
    none = execute_tool("edit", {"path": "f.py", "edits": []}, ctx)
    assert none.is_error and "at least one" in none.text
    assert (ws / "f.py").read_text() == ORIGINAL


def test_crlf_and_bom_are_kept(ctx, ws):
    original = "\ufeffone\r\ntwo\r\nthree\r\n"
    (ws / "win.txt").write_bytes(original.encode())
    # The model quotes with LF (or CRLF): both match; the file keeps CRLF and its BOM.
    result = edit(ctx, "win.txt", ("one\ntwo", "ONE\nTWO"), ("three\r\n", "3\r\n"))
    assert not result.is_error, result.text
    assert (ws / "win.txt").read_bytes() == "\ufeffONE\r\nTWO\r\n3\r\n".encode()
    # The diff speaks of the LF text, without the BOM.
    assert "-1 one" in result.details["diff"] and "\r" not in result.details["diff"]


def test_line_ending_is_the_files_first_one(ctx, ws):
    (ws / "mixed.txt").write_bytes(b"a\nb\r\nc\n")
    assert not edit(ctx, "mixed.txt", ("c", "C")).is_error
    # First line break LF: written back with LF everywhere (as pi does).
    assert (ws / "mixed.txt").read_bytes() == b"a\nb\nC\n"


def test_a_loose_match_keeps_the_other_lines_bytes(ctx, ws):
    # The file has a typographic quote and trailing spaces; the model quotes ASCII.
    (ws / "q.txt").write_text("keep   \nsay \u201chi\u201d  \nalso keep\t\n")
    result = edit(ctx, "q.txt", ('say "hi"', 'say "bye"'))
    assert not result.is_error, result.text
    assert (ws / "q.txt").read_text() == 'keep   \nsay "bye"\nalso keep\t\n'


def test_display_diff_skips_long_unchanged_stretches():
    old = "\n".join(f"line {i}" for i in range(1, 21)) + "\n"
    new = old.replace("line 2\n", "LINE 2\n").replace("line 19\n", "LINE 19\n")
    diff, first = edit_text.display_diff(old, new)
    assert first == 2
    lines = diff.split("\n")
    # numbers right-aligned to the widest (21 lines, with the empty one after the last \n)
    assert lines[:3] == ["  1 line 1", "- 2 line 2", "+ 2 LINE 2"]
    assert "    ..." in lines  # the 16 unchanged lines between the changes, shortened
    assert lines[-3:] == ["-19 line 19", "+19 LINE 19", " 20 line 20"]
