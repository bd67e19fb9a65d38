"""Unpacking an uploaded workspace archive: what is kept, and what is refused whole."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile

import pytest

from sessions_app.agent.archives import ArchiveError, unpack

LIMITS = {"max_bytes": 1 << 20, "max_files": 100}


def _tar(path, members):
    """members: (TarInfo settings dict, data bytes or None)."""
    with tarfile.open(path, "w:gz") as tar:
        for fields, data in members:
            info = tarfile.TarInfo(fields.pop("name"))
            for key, value in fields.items():
                setattr(info, key, value)
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return str(path)


def _dest(tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    return dest


def test_a_plain_tar_gz_is_unpacked_with_its_folders_modes_and_inner_links(tmp_path):
    archive = _tar(
        tmp_path / "a.tar.gz",
        [
            ({"name": "proj", "type": tarfile.DIRTYPE, "mode": 0o755}, None),
            ({"name": "proj/run.sh", "mode": 0o755}, b"echo hi\n"),
            ({"name": "proj/README", "mode": 0o644}, b"read me\n"),
            ({"name": "proj/docs", "type": tarfile.SYMTYPE, "linkname": "README"}, None),
            ({"name": "proj/copy", "type": tarfile.LNKTYPE, "linkname": "proj/README"}, None),
        ],
    )
    dest = _dest(tmp_path)
    done = unpack(archive, str(dest), **LIMITS)
    assert (dest / "proj" / "run.sh").read_bytes() == b"echo hi\n"
    assert os.stat(dest / "proj" / "run.sh").st_mode & 0o777 == 0o755
    assert os.readlink(dest / "proj" / "docs") == "README"
    assert (dest / "proj" / "copy").read_bytes() == b"read me\n"
    assert os.stat(dest / "proj" / "copy").st_nlink == 1  # a copy, not a link
    assert done.files == 3


def test_a_plain_zip_is_unpacked(tmp_path):
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("src/main.py", "print(1)\n")
        z.writestr("src/", "")
    dest = _dest(tmp_path)
    unpack(str(path), str(dest), **LIMITS)
    assert (dest / "src" / "main.py").read_text() == "print(1)\n"


HOSTILE_TARS = {
    "dotdot": [({"name": "../evil"}, b"x")],
    "dotdot-inside": [({"name": "a/../../evil"}, b"x")],
    "absolute": [({"name": "/tmp/evil"}, b"x")],
    "symlink-out": [({"name": "out", "type": tarfile.SYMTYPE, "linkname": "../../etc"}, None)],
    "symlink-absolute": [
        ({"name": "out", "type": tarfile.SYMTYPE, "linkname": "/etc/passwd"}, None)
    ],
    "symlink-then-write-through": [
        ({"name": "d", "type": tarfile.SYMTYPE, "linkname": "."}, None),
        ({"name": "d/x"}, b"x"),
    ],
    "hardlink-out": [({"name": "h", "type": tarfile.LNKTYPE, "linkname": "/etc/passwd"}, None)],
    "hardlink-dotdot": [({"name": "h", "type": tarfile.LNKTYPE, "linkname": "../x"}, None)],
    "device": [({"name": "dev", "type": tarfile.CHRTYPE, "devmajor": 1, "devminor": 3}, None)],
    "fifo": [({"name": "pipe", "type": tarfile.FIFOTYPE}, None)],
    "setuid": [({"name": "suid", "mode": 0o4755}, b"#!/bin/sh\n")],
    "setgid-dir": [({"name": "g", "type": tarfile.DIRTYPE, "mode": 0o2755}, None)],
}


@pytest.mark.parametrize("case", sorted(HOSTILE_TARS))
def test_a_hostile_tar_is_refused_and_leaves_nothing(tmp_path, case):
    archive = _tar(tmp_path / "h.tar.gz", [({"name": "ok.txt"}, b"fine"), *HOSTILE_TARS[case]])
    dest = _dest(tmp_path)
    with pytest.raises(ArchiveError):
        unpack(archive, str(dest), **LIMITS)
    assert os.listdir(dest) == []
    assert not (tmp_path / "evil").exists()


def test_a_tar_bomb_is_refused_before_it_is_inflated(tmp_path):
    path = tmp_path / "bomb.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("zeros")
        info.size = 50 << 20

        class Zeros(io.RawIOBase):
            left = info.size

            def readinto(self, b):
                n = min(len(b), self.left)
                b[:n] = bytes(n)
                self.left -= n
                return n

        tar.addfile(info, Zeros())
    assert os.path.getsize(path) < 200_000
    dest = _dest(tmp_path)
    with pytest.raises(ArchiveError, match="zip bomb"):
        unpack(str(path), str(dest), **LIMITS)
    assert os.listdir(dest) == []


def test_a_zip_bomb_is_refused(tmp_path):
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(3):
            z.writestr(f"z{i}", bytes(1 << 20))
    dest = _dest(tmp_path)
    with pytest.raises(ArchiveError, match="zip bomb"):
        unpack(str(path), str(dest), **LIMITS)
    assert os.listdir(dest) == []


def test_a_zip_whose_member_lies_about_its_size_is_cut_off(tmp_path):
    path = tmp_path / "liar.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("big", bytes(600_000))
    raw = bytearray(path.read_bytes())
    # Declare 10 bytes in the central directory and the local header.
    for sig in (b"PK\x01\x02", b"PK\x03\x04"):
        at = raw.find(sig)
        offset = 24 if sig == b"PK\x01\x02" else 22
        raw[at + offset : at + offset + 4] = (10).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    dest = _dest(tmp_path)
    with pytest.raises(ArchiveError):
        unpack(str(path), str(dest), **LIMITS)
    assert os.listdir(dest) == []


def _zip_with_mode(path, name, mode, data=b"x"):
    with zipfile.ZipFile(path, "w") as z:
        info = zipfile.ZipInfo(name)
        info.external_attr = mode << 16
        z.writestr(info, data)
    return str(path)


@pytest.mark.parametrize(
    "name,mode,data",
    [
        ("../evil", stat.S_IFREG | 0o644, b"x"),
        ("/abs", stat.S_IFREG | 0o644, b"x"),
        ("suid", stat.S_IFREG | 0o4755, b"x"),
        ("link", stat.S_IFLNK | 0o777, b"../../etc"),
        ("link", stat.S_IFLNK | 0o777, b"/etc/passwd"),
        ("dev", stat.S_IFCHR | 0o644, b""),
    ],
)
def test_a_hostile_zip_is_refused(tmp_path, name, mode, data):
    archive = _zip_with_mode(tmp_path / "h.zip", name, mode, data)
    dest = _dest(tmp_path)
    with pytest.raises(ArchiveError):
        unpack(archive, str(dest), **LIMITS)
    assert os.listdir(dest) == []


def test_a_file_that_is_no_archive_is_refused(tmp_path):
    path = tmp_path / "x.tar.gz"
    path.write_bytes(b"not an archive at all")
    with pytest.raises(ArchiveError):
        unpack(str(path), str(_dest(tmp_path)), **LIMITS)
