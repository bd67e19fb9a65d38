"""Archives an attacker uploads (issue 33, F and G), built as they would build them: the
unit tests of agent/archives.py and the workspace page's tests share them."""

from __future__ import annotations

import gzip
import io
import stat
import tarfile
import zipfile

# `s2 -> .`, `s1 -> s2/..` (the folder's parent), each next link one folder higher,
# then a file through the top one: every link alone looks inside.
LINK_CHAIN = [("s2", "."), ("s1", "s2/..")]
LINK_CHAIN += [(f"s{i}", f"s{i - 1 if i > 3 else 1}/..") for i in range(3, 8)]
LINK_CHAIN += [("etcpasswd", "s7/etc/passwd")]


def pax_bomb(path, field_bytes: int) -> int:
    """Write a .tgz whose first member's PAX header carries a ``path`` of ``field_bytes``
    bytes (by hand: tarfile would not make it), then an ordinary file; return the size
    its header declares."""
    body = len(" path=\n") + field_bytes
    length = body + len(str(body))
    length += len(str(length)) - len(str(body))
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = tarfile.XHDTYPE, length
    ok = tarfile.TarInfo("ok.txt")
    ok.size = 4
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(header.tobuf(tarfile.USTAR_FORMAT))
        out.write(f"{length} path=".encode())
        chunk = b"a" * (1 << 20)
        for start in range(0, field_bytes, len(chunk)):
            out.write(chunk[: min(len(chunk), field_bytes - start)])
        out.write(b"\n" + bytes(-length % 512))
        out.write(ok.tobuf(tarfile.USTAR_FORMAT) + b"fine" + bytes(508) + bytes(1024))
    return length


def link_chain_tar() -> bytes:
    """A .tar.gz holding a file and LINK_CHAIN."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        info = tarfile.TarInfo("ok.txt")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"fine"))
        for name, target in LINK_CHAIN:
            link = tarfile.TarInfo(name)
            link.type, link.linkname = tarfile.SYMTYPE, target
            tar.addfile(link)
    return data.getvalue()


def link_chain_zip() -> bytes:
    """A .zip holding a file and LINK_CHAIN (zip links: S_IFLNK in the external
    attributes, the target as the member's data)."""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as z:
        z.writestr("ok.txt", "fine")
        for name, target in LINK_CHAIN:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, target)
    return data.getvalue()
