"""agent/tools/find.py: paths by glob, .gitignore respected, capped."""

import pytest

from tests.support.tool_runs import run, tool_context, tool_workspace


@pytest.fixture
def ws(tmp_path):
    return tool_workspace(tmp_path)


@pytest.fixture
def ctx(ws, tmp_path):
    return tool_context(ws, tmp_path)


def test_find_glob_gitignore_and_cap(ctx, ws):
    (ws / ".gitignore").write_text("node_modules/\n")
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "x.js").write_text("")
    (ws / "src" / "deep").mkdir(parents=True)
    (ws / "src" / "deep" / "a.js").write_text("")
    (ws / "b.js").write_text("")
    assert run(ctx, "find", {"pattern": "*.js"}).text == "b.js\nsrc/deep/a.js"
    assert run(ctx, "find", {"pattern": "src/**/*.js"}).text == "src/deep/a.js"
    assert run(ctx, "find", {"pattern": "*.rs"}).text == "No files found matching pattern"
    for i in range(1005):
        (ws / f"f{i:04}.txt").write_text("")
    result = run(ctx, "find", {"pattern": "*.txt"})
    assert result.text.count("\n") == 1001
    assert result.text.endswith(
        "[1000 results limit reached. Use limit=2000 for more, or refine pattern]"
    )
