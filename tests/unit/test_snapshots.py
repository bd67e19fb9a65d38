"""agent/snapshots.py: a workspace's snapshots in a shadow git repository outside it, run
for real on a temporary folder (no database): commits of what changed, diffs with renames,
restores, the size limit, ignored folders, links stored as links, the user's own .git
left alone."""

import os

import pytest

from sessions_app.agent.snapshots import ShadowRepo


@pytest.fixture
def ws(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def repo(tmp_path, ws):
    return ShadowRepo(str(tmp_path / "shadow.git"), str(ws), max_file_bytes=1000)


def test_a_snapshot_is_a_commit_only_when_files_changed(repo, ws):
    (ws / "a.txt").write_text("one\ntwo\n")
    first = repo.snapshot("first")
    assert repo.has(first) and repo.head() == first
    assert repo.snapshot("again") == first  # nothing changed
    (ws / "a.txt").write_text("one\nTWO\n")
    (ws / "b.txt").write_text("new\n")
    second = repo.snapshot("second")
    stats = {s.path: s for s in repo.diff_stats(first, second)}
    assert (stats["a.txt"].status, stats["a.txt"].added, stats["a.txt"].removed) == (
        "modified",
        1,
        1,
    )
    assert stats["b.txt"].status == "added"
    assert "-two\n+TWO\n" in repo.diff_text(first, second, ["a.txt"])
    assert {s.path for s in repo.diff_stats(None, first)} == {"a.txt"}
    assert repo.diff_stats(second, second) == []
    assert not (ws / ".git").exists()  # the repository lives outside the workspace


def test_renames_binaries_and_deletions(repo, ws):
    (ws / "old.txt").write_text("the same text\n" * 5)
    (ws / "logo.bin").write_bytes(bytes(range(256)))
    (ws / "gone.txt").write_text("bye\n")
    base = repo.snapshot()
    (ws / "old.txt").rename(ws / "new.txt")
    (ws / "logo.bin").write_bytes(b"\x00\xff")
    (ws / "gone.txt").unlink()
    stats = {s.path: s for s in repo.diff_stats(base, repo.snapshot())}
    assert (stats["new.txt"].status, stats["new.txt"].old_path) == ("renamed", "old.txt")
    assert stats["logo.bin"].binary and stats["logo.bin"].status == "modified"
    assert stats["gone.txt"].status == "deleted"


def test_restore_brings_back_the_files_and_keeps_both_states(repo, ws):
    (ws / "keep.txt").write_text("v1\n")
    v1 = repo.snapshot()
    (ws / "keep.txt").write_text("v2\n")
    (ws / "extra.txt").write_text("later\n")
    before, after = repo.restore(v1)
    assert (ws / "keep.txt").read_text() == "v1\n" and not (ws / "extra.txt").exists()
    assert set(repo.files(before)) == {"keep.txt", "extra.txt"}  # the undo point
    assert repo.files(after) == ["keep.txt"] and repo.head() == after


def test_big_ignored_and_nested_repository_files_are_left_out_and_links_stay_links(
    repo, ws, tmp_path
):
    (ws / ".gitignore").write_text("build/\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.o").write_text("object")
    (ws / "big.txt").write_text("x" * 5000)  # over max_file_bytes
    (ws / "own").mkdir()
    (ws / "own" / ".git").mkdir()  # the user's own repository
    (ws / "own" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    os.symlink(secret, ws / "link")
    files = repo.files(repo.snapshot())
    assert "build/out.o" not in files and "big.txt" not in files
    assert not any(f.startswith("own/.git") for f in files)
    assert "link" in files
    assert repo.git("cat-file", "-p", f"{repo.head()}:link").decode() == str(secret)
    assert (ws / "own" / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"


def test_git_is_the_binary_the_setting_names(repo, ws, tmp_path, settings):
    """The worker's own git calls (the repository's set-up and its reads) run the binary
    PIWEB_GIT names; the snapshot's git runs in the sandbox, which sees the system's
    folders only."""
    log = tmp_path / "git-calls"
    wrapper = tmp_path / "logging-git"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec git "$@"\n')
    wrapper.chmod(0o755)
    (ws / "a.txt").write_text("one\n")
    commit = repo.snapshot("first")
    settings.PIWEB_GIT = str(wrapper)
    assert repo.has(commit)
    assert "cat-file" in log.read_text()
