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


# --- BeneathFiles: the core's file source for context files and skills -------------------


def test_beneath_files_reads_inside_and_names_what_leads_out(tree, tmp_path):
    root, _fd = tree
    os.symlink(root / "nowhere", root / "dangling")
    files = safefs.BeneathFiles([str(root)])
    assert files.read(str(root / "rel-in")) == b"inside"
    assert files.kind(str(root / "rel-in")) == "file"
    assert files.kind(str(root / "sub")) == "dir"
    for name in ("abs-out", "rel-out", "dir-out"):
        assert files.kind(str(root / name)) == "outside"
        with pytest.raises(safefs.EscapeError):
            files.read(str(root / name))
    with pytest.raises(safefs.EscapeError):
        files.list_dir(str(root / "dir-out"))
    assert files.kind(str(root / "dangling")) == "broken_link"
    assert files.kind(str(root / "missing")) is None
    # A path in no root is not there at all, and is never opened.
    assert files.kind(str(tmp_path / "secret.txt")) is None
    with pytest.raises(PermissionError):
        files.read(str(tmp_path / "secret.txt"))
    assert files.identity(str(root / "rel-in")) == files.identity(str(root / "sub" / "file.txt"))
    assert sorted(files.list_dir(str(root / "sub"))) == ["file.txt"]


def test_beneath_files_reads_only_regular_files_of_bounded_size(tree):
    root, _fd = tree
    os.mkfifo(root / "fifo")  # opened without blocking, refused
    (root / "big").write_bytes(b"x" * 101)
    (root / "fits").write_bytes(b"x" * 100)
    files = safefs.BeneathFiles([str(root)], max_bytes=100)
    assert files.kind(str(root / "fifo")) == "other"
    with pytest.raises(OSError, match="not a regular file"):
        files.read(str(root / "fifo"))
    with pytest.raises(OSError, match="larger than 100 bytes"):
        files.read(str(root / "big"))
    assert files.read(str(root / "fits")) == b"x" * 100


def test_mkdir_beneath_makes_folders_inside_and_follows_no_link(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    made = safefs.mkdir_beneath(str(root), "alt/one")
    assert made == os.path.join(str(root), "alt", "one") and os.path.isdir(made)
    assert safefs.mkdir_beneath(str(root), "alt/two") == os.path.join(os.path.dirname(made), "two")
    with pytest.raises(FileExistsError):
        safefs.mkdir_beneath(str(root), "alt/one")
    (root / "link").symlink_to(outside)
    with pytest.raises(safefs.EscapeError):
        safefs.mkdir_beneath(str(root), "link/new")
    for bad in ("../x", "", "/", "a/../../x"):
        with pytest.raises(safefs.EscapeError):
            safefs.mkdir_beneath(str(root), bad)
    assert os.listdir(outside) == [] and not (tmp_path / "x").exists()


def test_remove_beneath_removes_a_folder_inside_and_nothing_through_a_link(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "alt" / "one" / "sub").mkdir(parents=True)
    (root / "alt" / "one" / "sub" / "f.txt").write_text("x")
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    (root / "alt" / "one" / "out").symlink_to(outside)  # a link inside: removed, not followed
    (root / "alt" / "tolink").symlink_to(outside)
    (root / "via").symlink_to(root / "alt")
    (root / "alt" / "file").write_text("f")

    assert safefs.remove_beneath(str(root), "alt/one")
    assert not (root / "alt" / "one").exists() and (outside / "keep.txt").exists()
    assert not safefs.remove_beneath(str(root), "alt/one")  # gone already
    assert not safefs.remove_beneath(str(root), "alt/tolink")  # a link: left alone
    assert not safefs.remove_beneath(str(root), "alt/file")  # a file: left alone
    assert (root / "alt" / "tolink").is_symlink() and (root / "alt" / "file").exists()
    with pytest.raises(safefs.EscapeError):  # a link on the way is not followed
        safefs.remove_beneath(str(root), "via/file")
    with pytest.raises(safefs.EscapeError):
        safefs.remove_beneath(str(root), "../outside")
    assert (outside / "keep.txt").read_text() == "keep"
