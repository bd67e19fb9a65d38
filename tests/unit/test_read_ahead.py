"""Files prepared ahead in helper processes (`core.read_ahead`): real processes, real
pipes. What a helper prepares must be exactly what `prepare_file` gives here, a helper
that fails or dies must give a clear error and leave the next run working, and a helper
must not outlive the process that started it."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys

import psutil
import pytest

from sessions_app.core.file_marks import marks_at
from sessions_app.core.import_lines import LinePreparer, PreparedEntry, RawObject, Skip, Warn
from sessions_app.core.read_ahead import (
    FileDigest,
    ReadAhead,
    ReadAheadError,
    prepare_file,
    prepared_files,
)
from sessions_app.core.usage import EntryUsage
from tests.conftest import REPO


def entry_line(n: int, text: str, **extra) -> bytes:
    message = {"role": ("user", "assistant")[n % 2], "content": [{"type": "text", "text": text}]}
    if n % 2:
        message.update(
            provider="p",
            model="m",
            usage={
                "input": n,
                "output": 2,
                "cacheRead": 0,
                "cacheWrite": 0,
                "cost": {"total": 0.25},
            },
        )
    entry = {
        "type": "message",
        "id": f"{n:08x}",
        "parentId": f"{n - 1:08x}" if n else None,
        "timestamp": f"2026-01-0{1 + n % 2}T00:00:00.000Z",
        "message": message,
        **extra,
    }
    return json.dumps(entry, ensure_ascii=False).encode() + b"\n"


def session_file(path, entries: int, *, size: int = 200, header_extra=None, tail=b"") -> str:
    header = {"type": "session", "version": 3, "id": path.stem, "timestamp": "t", "cwd": "/p"}
    header.update(header_extra or {})
    body = [json.dumps(header).encode() + b"\n"]
    for n in range(entries):
        body.append(entry_line(n, f"line {n} caf\u00e9 " + "x" * size))
    path.write_bytes(b"".join(body) + tail)
    return str(path)


def odd_file(path) -> str:
    """Every kind of record: skipped lines, a repaired line, a long-field warning, a
    label and a name, and a line still being written at the end."""
    lines = [
        json.dumps({"type": "session", "version": 3, "id": "odd", "timestamp": "t", "cwd": "/p"}),
        "{not json",
        entry_line(0, "first").decode().strip(),
        json.dumps(
            {"type": "label", "id": "2", "parentId": "0", "targetId": "0", "label": "L" * 300}
        ),
        json.dumps({"type": "session_info", "id": "3", "parentId": "2", "name": "named"}),
        "[1, 2]",
        json.dumps(
            {
                "type": "message",
                "id": "4",
                "parentId": "3",
                "message": {"role": "user", "n": 10**30},
            }
        ),
    ]
    data = "\n".join(lines).encode() + b"\n"
    data += b'{"type":"message","id":"1","parentId":"00000000","message":{"content":"\xff"}}\n'
    path.write_bytes(data + b'{"type":"message","id":"00000005"')  # (half written)
    return str(path)


def read_all(iterator) -> tuple[list, FileDigest]:
    records, digest = [], None
    for item in iterator:
        if isinstance(item, FileDigest):
            digest = item
        else:
            records.extend(item)
    return records, digest


def test_prepare_file_gives_the_records_of_the_complete_lines_and_the_digest(tmp_path):
    path = odd_file(tmp_path / "odd.jsonl")
    size = os.path.getsize(path)
    records, digest = read_all(prepare_file(path, size, chunk_size=97))
    data = open(path, "rb").read()
    end = data.rindex(b"\n") + 1
    preparer = LinePreparer()
    assert records == preparer.feed(data[:end]) + preparer.end()
    kinds = {type(r) for r in records}
    assert kinds == {RawObject, PreparedEntry, Skip, Warn}
    with open(path, "rb") as fh:
        marks = marks_at(fh, end)
    assert digest == FileDigest(end, hashlib.sha256(data[:end]).hexdigest(), 8, marks)


def test_helpers_prepare_exactly_what_prepare_file_gives(tmp_path):
    paths = [session_file(tmp_path / f"s{n}.jsonl", 40 + 70 * n, size=900) for n in range(5)]
    paths.insert(2, odd_file(tmp_path / "odd.jsonl"))
    paths.append(session_file(tmp_path / "tail.jsonl", 3, tail=b'{"type":"mess'))
    run = [(path, os.path.getsize(path)) for path in paths]
    expected = [read_all(prepare_file(path, size)) for path, size in run]
    with ReadAhead(processes=2) as helper:
        for _ in range(2):  # a second run on the same helpers
            got = [read_all(files) for files in helper.files(run)]
            assert got == expected
            # (records keep their types: a usage is still an EntryUsage)
            usages = [r.usage for r in got[0][0] if isinstance(r, PreparedEntry) and r.usage]
            assert usages and all(type(u[0]) is EntryUsage for u in usages)
    assert prepared_files(run, None) is not None
    assert [read_all(files) for files in prepared_files(run, None)] == expected


def test_a_file_the_helper_cannot_read_is_a_clear_error_and_the_next_run_works(tmp_path):
    good = session_file(tmp_path / "good.jsonl", 20)
    gone = str(tmp_path / "gone.jsonl")
    huge = session_file(tmp_path / "huge.jsonl", 2, header_extra={"n": 10**30})
    with ReadAhead(processes=1) as helper:
        for bad, why in ((gone, "No such file"), (huge, "")):
            size = os.path.getsize(bad) if os.path.exists(bad) else 100
            files = helper.files([(good, os.path.getsize(good)), (bad, size)])
            assert read_all(next(files)) == read_all(prepare_file(good, os.path.getsize(good)))
            with pytest.raises(ReadAheadError) as caught:
                read_all(next(files))
            assert bad in str(caught.value) and why in str(caught.value)
            again = [read_all(f) for f in helper.files([(good, os.path.getsize(good))])]
            assert again == [read_all(prepare_file(good, os.path.getsize(good)))]


def helper_processes(parent: psutil.Process) -> list[psutil.Process]:
    return [
        child
        for child in parent.children(recursive=True)
        if "sessions_app.core.read_ahead" in " ".join(child.cmdline())
    ]


def test_a_helper_that_dies_is_an_error_and_a_half_read_run_is_dropped(tmp_path):
    paths = [session_file(tmp_path / f"s{n}.jsonl", 3000, size=900) for n in range(3)]
    run = [(path, os.path.getsize(path)) for path in paths]
    expected = [read_all(prepare_file(path, size)) for path, size in run]
    with ReadAhead(processes=1) as helper:
        files = helper.files(run)
        first = next(files)
        next(first)  # one chunk read: the helper is running
        (process,) = helper_processes(psutil.Process())
        process.send_signal(signal.SIGKILL)
        with pytest.raises(ReadAheadError, match="stopped"):
            read_all(first)
            read_all(next(files))
        assert [read_all(f) for f in helper.files(run)] == expected

        # a run left half read: the next run does not get its chunks
        files = helper.files(run)
        next(next(files))
        assert [read_all(f) for f in helper.files(run[1:])] == expected[1:]
    assert helper_processes(psutil.Process()) == []


def test_helpers_end_when_the_process_that_started_them_is_killed(tmp_path):
    path = session_file(tmp_path / "big.jsonl", 20000, size=900)
    script = (
        "import os, sys, time\n"
        "from sessions_app.core.read_ahead import ReadAhead\n"
        "helper = ReadAhead(processes=2)\n"
        f"files = helper.files([({path!r}, os.path.getsize({path!r}))] * 2)\n"
        "next(next(files))\n"
        "print('reading', flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout.readline().strip() == "reading"
        helpers = helper_processes(psutil.Process(parent.pid))
        assert len(helpers) == 2
        parent.kill()  # (SIGKILL: no cleanup runs in the parent)
        parent.wait(10)
        gone, alive = psutil.wait_procs(helpers, timeout=15)
        assert alive == [], [p.pid for p in alive]
    finally:
        parent.kill()
        parent.wait()
