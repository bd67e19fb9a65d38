"""agent/tools/grep.py: matches with context, pi's caps and notices."""

import pytest

from tests.support.tool_runs import run, tool_context, tool_workspace


@pytest.fixture
def ws(tmp_path):
    return tool_workspace(tmp_path)


@pytest.fixture
def ctx(ws, tmp_path):
    return tool_context(ws, tmp_path)


def test_grep_regex_glob_gitignore_context(ctx, ws):
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.txt").write_text("needle\n")
    (ws / "x.log").write_text("needle\n")
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("one\nneedle = 1\nthree\n")
    (ws / "src" / "b.txt").write_text("Needle\n")
    (ws / "bin.dat").write_bytes(b"\x00needle")
    assert run(ctx, "grep", {"pattern": "needle"}).text == "src/a.py:2: needle = 1"
    assert run(ctx, "grep", {"pattern": "needle", "ignoreCase": True}).text == (
        "src/a.py:2: needle = 1\nsrc/b.txt:1: Needle"
    )
    assert run(ctx, "grep", {"pattern": "needle", "glob": "*.txt", "ignoreCase": True}).text == (
        "src/b.txt:1: Needle"
    )
    assert run(ctx, "grep", {"pattern": "needle", "context": 1}).text == (
        "src/a.py-1- one\nsrc/a.py:2: needle = 1\nsrc/a.py-3- three"
    )
    assert run(ctx, "grep", {"pattern": "needle", "path": "src/a.py"}).text == "a.py:2: needle = 1"
    assert run(ctx, "grep", {"pattern": "nothing"}).text == "No matches found"
    assert run(ctx, "grep", {"pattern": "(", "literal": True}).text == "No matches found"
    bad = run(ctx, "grep", {"pattern": "("})
    assert bad.is_error and "Invalid regex" in bad.text


def test_grep_caps_matches_and_cuts_long_lines(ctx, ws):
    (ws / "many.txt").write_text("hit\n" * 150 + "hit " + "z" * 600 + "\n")
    result = run(ctx, "grep", {"pattern": "hit"})
    assert result.text.count("\n") == 101  # 100 matches, a blank line, the notice
    assert result.text.endswith(
        "\n\n[100 matches limit reached. Use limit=200 for more, or refine pattern]"
    )
    assert result.details == {"matchLimitReached": 100}
    long = run(ctx, "grep", {"pattern": "z+", "limit": 5})
    assert long.text.startswith("many.txt:151: hit " + "z" * 496 + "... [truncated]")
    assert long.text.endswith(
        "[Some lines truncated to 500 chars. Use read tool to see full lines]"
    )
