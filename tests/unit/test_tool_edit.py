"""agent/tools/edit.py: the forms of arguments pi accepts, the schema, a missing file.

The replacement rules themselves (agent/edits.py) are tests/unit/test_edits.py's.
"""

import pytest

from tests.support.tool_runs import run, tool_context, tool_workspace


@pytest.fixture
def ws(tmp_path):
    return tool_workspace(tmp_path)


@pytest.fixture
def ctx(ws, tmp_path):
    return tool_context(ws, tmp_path)


ORIGINAL = "alpha = 1\nbeta = 2\ngamma = 3\ndelta = 4\n"


def edit(ctx, path, *pairs, **extra):
    args = {"path": path, "edits": [{"oldText": o, "newText": n} for o, n in pairs], **extra}
    return run(ctx, "edit", args)


def test_the_legacy_single_pair_and_edits_as_a_json_string_are_accepted(ctx, ws):
    # pi accepts both (models send them); the schema offered is edits[] only.
    (ws / "f.py").write_text(ORIGINAL)
    legacy = run(ctx, "edit", {"path": "f.py", "oldText": "alpha = 1", "newText": "alpha = 0"})
    assert not legacy.is_error and legacy.text == "Successfully replaced 1 block(s) in f.py."
    as_string = run(
        ctx, "edit", {"path": "f.py", "edits": '[{"oldText": "beta = 2", "newText": "beta = 0"}]'}
    )
    assert not as_string.is_error, as_string.text
    assert (ws / "f.py").read_text() == "alpha = 0\nbeta = 0\ngamma = 3\ndelta = 4\n"


def test_the_schema_refuses_unknown_keys(ctx, ws):
    (ws / "f.py").write_text(ORIGINAL)
    extra = edit(ctx, "f.py", ("alpha", "A"), replace_all=True)
    assert extra.is_error and "Validation failed" in extra.text
    bad_item = run(
        ctx, "edit", {"path": "f.py", "edits": [{"oldText": "alpha", "newText": "A", "x": 1}]}
    )
    assert bad_item.is_error and "Validation failed" in bad_item.text
    assert (ws / "f.py").read_text() == ORIGINAL


def test_a_missing_file_is_an_error_result(ctx):
    result = edit(ctx, "nope.txt", ("a", "b"))
    assert result.is_error and "nope.txt" in result.text and "ENOENT" in result.text
