"""agent/tools/listing.py: the walk grep, find and ls share (.git skipped, every .gitignore
on the way down respected, symlinks never descended into, none leading out reported),
and the answer cut at pi's byte cap."""

import os

import pytest

from sessions_app.agent.tools import ToolError
from sessions_app.agent.tools.listing import directory_arg, listing_result, read_in_root, walk
from tests.support.tool_runs import tool_context, tool_workspace


@pytest.fixture
def ws(tmp_path):
    return tool_workspace(tmp_path)


@pytest.fixture
def ctx(ws, tmp_path):
    return tool_context(ws, tmp_path)


def walked(ctx, ws, **kwargs):
    return [(os.path.relpath(path, ws), is_dir) for path, is_dir in walk(str(ws), ctx, **kwargs)]


def test_the_walk_is_sorted_skips_git_and_keeps_hidden_files(ctx, ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref\n")
    (ws / "b").mkdir()
    (ws / "b" / "z.txt").write_text("")
    (ws / "a.txt").write_text("")
    (ws / ".env").write_text("")
    assert walked(ctx, ws) == [(".env", False), ("a.txt", False), ("b/z.txt", False)]
    assert walked(ctx, ws, include_dirs=True) == [
        (".env", False),
        ("a.txt", False),
        ("b", True),
        ("outside-sibling", True),  # a folder's own entries first, then its subfolders'
        ("b/z.txt", False),
    ]


def test_every_gitignore_on_the_way_down_applies(ctx, ws):
    (ws / ".gitignore").write_text("*.log\nbuild/\n")
    (ws / "src" / "build").mkdir(parents=True)
    (ws / "src" / "build" / "out.txt").write_text("")
    (ws / "src" / ".gitignore").write_text("secret.txt\n")
    (ws / "src" / "secret.txt").write_text("")
    (ws / "src" / "kept.txt").write_text("")
    (ws / "src" / "x.log").write_text("")
    (ws / "secret.txt").write_text("")  # the nested rule covers only its own folder
    assert [p for p, _ in walked(ctx, ws)] == [
        ".gitignore",
        "secret.txt",
        "src/.gitignore",
        "src/kept.txt",
    ]


def test_symlinks_are_listed_only_inside_and_never_descended(ctx, ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("")
    (ws / "real").mkdir()
    (ws / "real" / "file.txt").write_text("")
    os.symlink(ws / "real", ws / "again")  # a folder inside: not walked twice
    os.symlink(ws / "real" / "file.txt", ws / "alias.txt")  # a file inside: listed
    os.symlink(outside, ws / "out")  # leads outside: not there at all
    os.symlink(outside / "secret.txt", ws / "out.txt")
    assert [p for p, _ in walked(ctx, ws)] == ["alias.txt", "real/file.txt"]


def test_read_in_root_refuses_what_is_not_a_regular_file_or_too_big(ws):
    ctx_ws = tool_context(ws, ws.parent).workspace
    (ws / "f.txt").write_text("hello")
    assert read_in_root(ctx_ws, str(ws / "f.txt"), follow=False) == "hello"
    with pytest.raises(OSError, match="too large"):
        read_in_root(ctx_ws, str(ws / "f.txt"), follow=False, max_bytes=4)
    with pytest.raises(OSError):
        read_in_root(ctx_ws, str(ws / "outside-sibling"), follow=False)


def test_a_directory_argument_must_be_a_folder_in_the_workspace(ctx, ws):
    (ws / "f.txt").write_text("")
    assert directory_arg({}, ctx) == str(ws)
    with pytest.raises(ToolError, match="Not a directory"):
        directory_arg({"path": "f.txt"}, ctx)
    with pytest.raises(ToolError, match="Path not found"):
        directory_arg({"path": "missing"}, ctx)


def test_the_answer_is_cut_at_the_byte_cap_with_the_notice():
    lines = [f"{i:05} " + "x" * 94 for i in range(1000)]  # 100 bytes a line, 100KB in all
    result = listing_result(lines, {"resultLimitReached": 7}, lambda cut: f"cut={cut}")
    assert result.text.endswith("\n\ncut=True")
    assert result.details["resultLimitReached"] == 7
    assert result.details["truncation"]["truncatedBy"] == "bytes"
    assert len(result.text.encode()) < 52 * 1024
    short = listing_result(["a", "b"], {}, lambda cut: None)
    assert short.text == "a\nb" and short.details is None
