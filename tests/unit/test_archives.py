"""Unpacking an uploaded workspace archive: what is kept, and what is refused whole."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from sessions_app.agent import archives
from sessions_app.agent.archives import ArchiveError, unpack
from tests.support.hostile_archives import link_chain_tar, link_chain_zip, pax_bomb

LIMITS = {"max_bytes": 1 << 20, "max_files": 100}
REPO = Path(__file__).resolve().parents[2]


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
    dest.mkdir(parents=True)
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
    with pytest.raises(ArchiveError, match="not a .tar.gz or .zip archive"):
        unpack(str(path), str(_dest(tmp_path)), **LIMITS)


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_damaged_compressed_data_is_refused_with_a_clear_error(tmp_path, compress):
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        text = b"".join(b"line %d of the file\n" % i for i in range(20_000))
        info = tarfile.TarInfo("a.txt")
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
    packed = bytearray(compress(data.getvalue()))
    packed[len(packed) // 2 : len(packed) // 2 + 64] = bytes(64)  # damaged in the middle
    path = tmp_path / "damaged"
    path.write_bytes(bytes(packed))
    dest = _dest(tmp_path)
    with pytest.raises(ArchiveError):
        unpack(str(path), str(dest), **LIMITS)
    assert os.listdir(dest) == []


# --- extended headers are bounded before tarfile reads them (issue 33, F) ---------------


MEASURE = """
import resource, sys
from sessions_app.agent.archives import ArchiveError, unpack
from tests.support.hostile_archives import link_chain_tar, link_chain_zip, pax_bomb
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    unpack(sys.argv[1], sys.argv[2], max_bytes=1 << 30, max_files=100)
    print("unpacked")
except ArchiveError as exc:
    print(exc)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def test_a_pax_header_memory_bomb_is_refused_in_bounded_memory(tmp_path):
    field = 200 << 20
    archive = str(tmp_path / "pax.tgz")
    declared = pax_bomb(archive, field)
    assert os.path.getsize(archive) < 2 << 20  # small to upload
    dest = _dest(tmp_path)
    run = subprocess.run(
        [sys.executable, "-c", MEASURE, archive, str(dest)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    message, grown_kb = run.stdout.strip().splitlines()
    assert f"a PAX header of {declared:,} bytes" in message and "at most 65,536" in message
    assert int(grown_kb) < 20_000, f"the process grew by {int(grown_kb) // 1024} MB"
    assert os.listdir(dest) == []


@pytest.mark.parametrize(
    "kind", [tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XGLTYPE]
)
def test_every_extended_header_is_bounded(tmp_path, kind):
    header = tarfile.TarInfo("././@LongLink")
    header.type, header.size = kind, 10 << 20
    path = tmp_path / "long.tgz"
    with gzip.open(path, "wb") as out:
        out.write(header.tobuf(tarfile.USTAR_FORMAT) + bytes(10 << 20) + bytes(1024))
    with pytest.raises(ArchiveError, match="header of 10,485,760 bytes"):
        unpack(str(path), str(_dest(tmp_path)), **LIMITS)


def test_long_names_within_the_bound_still_unpack(tmp_path):
    name = "/".join(["d" * 100] * 30) + "/file.txt"  # 3 KB: PAX and GNU long names
    for fmt in (tarfile.PAX_FORMAT, tarfile.GNU_FORMAT):
        path = tmp_path / f"long-{fmt}.tgz"
        with tarfile.open(path, "w:gz", format=fmt) as tar:
            info = tarfile.TarInfo(name)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"ok"))
        dest = tmp_path / f"dest-{fmt}"
        dest.mkdir()
        unpack(str(path), str(dest), **LIMITS)
        assert (dest / name).read_bytes() == b"ok"


def test_a_run_of_extended_headers_and_sparse_members_are_refused(tmp_path):
    pax = tarfile.TarInfo("x")
    pax.type, pax.size = tarfile.XHDTYPE, 512
    record = b"12 path=abc\n".ljust(512, b"\0")
    path = tmp_path / "run.tgz"
    with gzip.open(path, "wb") as out:
        out.write((pax.tobuf(tarfile.USTAR_FORMAT) + record) * 50 + bytes(1024))
    dest = _dest(tmp_path)
    with pytest.raises(ArchiveError, match="extended headers in a row"):
        unpack(str(path), str(dest), **LIMITS)
    sparse = tarfile.TarInfo("holes")
    sparse.type = tarfile.GNUTYPE_SPARSE
    path = tmp_path / "sparse.tgz"
    with gzip.open(path, "wb") as out:
        out.write(sparse.tobuf(tarfile.GNU_FORMAT) + bytes(1024))
    with pytest.raises(ArchiveError, match="sparse"):
        unpack(str(path), str(dest), **LIMITS)


# --- links are followed through the archive's other links (issue 33, G) ------------------


def test_a_chain_of_links_that_climbs_out_is_refused(tmp_path):
    # Each link alone looks inside: only following the others shows where it goes.
    for name, data in (("chain.tgz", link_chain_tar()), ("chain.zip", link_chain_zip())):
        (tmp_path / name).write_bytes(data)
        dest = _dest(tmp_path / name.split(".")[1])
        with pytest.raises(ArchiveError, match="s1: a link that leads outside through other"):
            unpack(str(tmp_path / name), str(dest), **LIMITS)
        assert os.listdir(dest) == []


def test_links_through_links_that_stay_inside_are_kept(tmp_path):
    archive = _tar(
        tmp_path / "inside.tgz",
        [
            ({"name": "a/b/file.txt"}, b"deep"),
            ({"name": "up", "type": tarfile.SYMTYPE, "linkname": "a/b/.."}, None),
            ({"name": "a/b/back", "type": tarfile.SYMTYPE, "linkname": "../../up/b"}, None),
            ({"name": "file", "type": tarfile.SYMTYPE, "linkname": "a/b/back/file.txt"}, None),
        ],
    )
    dest = _dest(tmp_path)
    unpack(archive, str(dest), **LIMITS)
    assert (dest / "file").read_bytes() == b"deep"


def test_a_loop_of_links_is_refused(tmp_path):
    archive = _tar(
        tmp_path / "loop.tgz",
        [
            ({"name": "a", "type": tarfile.SYMTYPE, "linkname": "b/x"}, None),
            ({"name": "b", "type": tarfile.SYMTYPE, "linkname": "a/y"}, None),
        ],
    )
    with pytest.raises(ArchiveError, match="a chain of links that cannot be followed"):
        unpack(archive, str(_dest(tmp_path)), **LIMITS)


@pytest.mark.parametrize(
    "size, fmt",
    [(0, tarfile.USTAR_FORMAT), (1234567, tarfile.USTAR_FORMAT), (9 * 8**11, tarfile.GNU_FORMAT)],
)
def test_header_fields_are_read_as_tar_writes_them(size, fmt):
    """Our reading of a header's size and checksum agrees with tarfile's own (including
    GNU's base-256 size for members over 8 GiB)."""
    info = tarfile.TarInfo("x" * 40)
    info.size = size
    block = info.tobuf(format=fmt, encoding="utf-8", errors="strict")[-512:]
    assert archives._header_number(block[124:136]) == tarfile.nti(block[124:136]) == size
    assert archives._header_number(block[148:156]) in archives._header_checksums(block)
    assert archives._header_checksums(block) == tarfile.calc_chksums(block)
    damaged = block[:148] + b"0000001\0" + block[156:]
    assert archives._header_number(damaged[148:156]) not in archives._header_checksums(damaged)
    with pytest.raises(ValueError):
        archives._header_number(b"12x4567\0")
