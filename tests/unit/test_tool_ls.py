"""agent/tools/ls.py: a folder's entries, sorted, folders marked, capped."""

import pytest

from tests.support.tool_runs import run, tool_context, tool_workspace


@pytest.fixture
def ws(tmp_path):
    return tool_workspace(tmp_path)


@pytest.fixture
def ctx(ws, tmp_path):
    return tool_context(ws, tmp_path)


def test_ls_sorted_dirs_marked_and_capped(ctx, ws):
    (ws / "Beta").mkdir()
    (ws / "alpha.txt").write_text("")
    (ws / ".hidden").write_text("")
    assert run(ctx, "ls", {}).text == ".hidden\nalpha.txt\nBeta/\noutside-sibling/"
    for i in range(510):
        (ws / "Beta" / f"e{i:03}").write_text("")
    result = run(ctx, "ls", {"path": "Beta"})
    assert result.text.endswith("\n\n[500 entries limit reached. Use limit=1000 for more]")
    assert run(ctx, "ls", {"path": "alpha.txt"}).text.startswith("Not a directory")
    (ws / "empty").mkdir()
    assert run(ctx, "ls", {"path": "empty"}).text == "(empty directory)"
