"""Opening beneath a directory: openat2(RESOLVE_BENEATH), and the fallback for kernels
without openat2 (every symlink and ``..`` refused)."""

import os

import pytest

from sessions_app.agent import safefs


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "file.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path / "secret.txt", root / "abs-out")
    os.symlink("../secret.txt", root / "rel-out")
    os.symlink("sub/file.txt", root / "rel-in")
    os.symlink(tmp_path, root / "dir-out")
    fd = safefs.open_root(str(root))
    yield root, fd
    os.close(fd)


def read(fd, path, follow=True):
    handle = safefs.open_beneath(fd, path, os.O_RDONLY, follow=follow)
    try:
        return safefs.read_all(handle).decode()
    finally:
        os.close(handle)


@pytest.fixture(params=["openat2", "fallback"])
def mode(request, monkeypatch):
    if request.param == "fallback":
        monkeypatch.setattr(safefs, "_have_openat2", False)
    return request.param


def test_files_inside_open(tree, mode):
    _root, fd = tree
    assert read(fd, "sub/file.txt") == "inside"
    assert read(fd, "./sub//file.txt") == "inside"


@pytest.mark.parametrize(
    "path", ["abs-out", "rel-out", "dir-out/secret.txt", "../secret.txt", "sub/../../secret.txt"]
)
def test_escapes_are_refused(tree, mode, path):
    _root, fd = tree
    with pytest.raises(safefs.EscapeError):
        read(fd, path)


def test_relative_symlink_inside_is_followed_only_with_openat2(tree, mode):
    _root, fd = tree
    if mode == "openat2":
        assert read(fd, "rel-in") == "inside"
    else:  # the fallback refuses every symlink
        with pytest.raises(safefs.EscapeError):
            read(fd, "rel-in")
    with pytest.raises(safefs.EscapeError):
        read(fd, "rel-in", follow=False)


def test_open_root_refuses_a_path_through_a_symlink(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(safefs.EscapeError):
        safefs.open_root(str(tmp_path / "link"))
