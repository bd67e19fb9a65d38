"""agent/tools/write.py: a whole file written, its folders created."""

import pytest

from tests.support.tool_runs import run, tool_context, tool_workspace


@pytest.fixture
def ws(tmp_path):
    return tool_workspace(tmp_path)


@pytest.fixture
def ctx(ws, tmp_path):
    return tool_context(ws, tmp_path)


def test_write_creates_parent_directories(ctx, ws):
    result = run(ctx, "write", {"path": "deep/er/file.txt", "content": "héllo"})
    assert result.text == "Successfully wrote 5 bytes to deep/er/file.txt"
    assert (ws / "deep/er/file.txt").read_text() == "héllo"
