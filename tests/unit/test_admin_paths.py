"""management/admin_paths.py: the management commands' file access."""

import pytest

from sessions_app.management import admin_paths


def test_write_whole_replaces_the_file_at_once_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_bytes(b"old\n")
    assert admin_paths.write_whole(str(target), lambda fh: fh.write(b"new\n")) == 4
    assert target.read_bytes() == b"new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_write_whole_that_fails_keeps_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_bytes(b"old\n")

    def half(fh):
        fh.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        admin_paths.write_whole(str(target), half)
    assert target.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_jsonl_files_under_a_folder_sorted_files_only(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "2.jsonl").write_text("{}\n")
    (tmp_path / "1.jsonl").write_text("{}\n")
    (tmp_path / "dir.jsonl").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    assert admin_paths.jsonl_files_under(tmp_path) == [
        tmp_path / "1.jsonl",
        tmp_path / "b" / "2.jsonl",
    ]
