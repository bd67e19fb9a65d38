"""The files the management commands touch: paths an administrator names on the command
line (``-o FILE``, the folders to import or watch) or that piweb's settings name (pi's
session folder, ``docs/configuration.md``), never a path taken from a request or a
session. This module is the commands' only file access: the file-access check
(``tests/unit/test_file_access.py``) lets it alone among them call file functions, and
lets only the commands import it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any


def is_folder(path: str | Path) -> bool:
    return os.path.isdir(path)


def is_regular_file(path: str | Path) -> bool:
    return os.path.isfile(path)


def lexists(path: str) -> bool:
    return os.path.lexists(path)


def folders_among(paths: Iterable[str]) -> list[str]:
    return [p for p in paths if os.path.isdir(p)]


def jsonl_files_under(folder: Path) -> list[Path]:
    """Every ``*.jsonl`` file beneath ``folder``, sorted (like ~/.pi/agent/sessions)."""
    return sorted(p for p in folder.rglob("*.jsonl") if p.is_file())


def open_input(path: str | Path) -> IO[bytes]:
    return open(path, "rb")  # noqa: SIM115 (the caller closes it)


def open_output(path: str | Path, *, text: bool = False) -> IO[Any]:
    if text:
        return open(path, "w", encoding="utf-8")  # noqa: SIM115 (the caller closes it)
    return open(path, "wb")  # noqa: SIM115


def write_whole(path: str, write: Callable[[IO[bytes]], int]) -> int:
    """``write`` into a temporary file beside ``path``, then renamed to it (a reader never
    sees half a file); what ``write`` returns. OSError when it cannot be written."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as fh:
            result = write(fh)
        os.replace(tmp, path)
        return result
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_document(path: Path) -> str:
    return path.read_text()


def write_document(path: Path, text: str) -> None:
    path.write_text(text)
