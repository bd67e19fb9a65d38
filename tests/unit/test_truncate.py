"""Unit tests for sessions_app.core.truncate (no Django needed)."""

from __future__ import annotations

import os
import random
import stat
import tracemalloc

import pytest

from sessions_app.core.truncate import (
    CAPPED_HEADER_BYTES,
    DEFAULT_MAX_BYTES,
    StreamingTail,
    TruncationResult,
    bash_output_text,
    bash_tool_text,
    bash_truncation_notice,
    find_notice,
    format_size,
    grep_notice,
    ls_notice,
    read_first_line_too_long_notice,
    read_more_lines_notice,
    read_output_text,
    read_truncation_notice,
    truncate_head,
    truncate_line,
    truncate_tail,
)

# ---------------------------------------------------------------------------
# A deliberately naive model of pi's algorithm (split into lines, walk them)
# used as an oracle for the fast implementation.
# ---------------------------------------------------------------------------


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _model(content: str, max_lines: int, max_bytes: int, tail: bool) -> dict:
    # pi 0.80.2: no lines in "", and a trailing newline does not start one.
    lines = content.split("\n") if content else []
    if content.endswith("\n"):
        lines.pop()
    total_lines, total_bytes = len(lines), _nbytes(content)
    base = {
        "totalLines": total_lines,
        "totalBytes": total_bytes,
        "maxLines": max_lines,
        "maxBytes": max_bytes,
        "lastLinePartial": False,
        "firstLineExceedsLimit": False,
    }
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return base | {
            "content": content,
            "truncated": False,
            "truncatedBy": None,
            "outputLines": total_lines,
            "outputBytes": total_bytes,
        }
    kept: list[str] = []
    used = 0
    by = "lines"
    partial = False
    if not tail:
        if _nbytes(lines[0]) > max_bytes:
            return base | {
                "content": "",
                "truncated": True,
                "truncatedBy": "bytes",
                "outputLines": 0,
                "outputBytes": 0,
                "firstLineExceedsLimit": True,
            }
        for index, line in enumerate(lines[: max(0, max_lines)]):
            size = _nbytes(line) + (1 if index else 0)
            if used + size > max_bytes:
                by = "bytes"
                break
            kept.append(line)
            used += size
    else:
        for line in reversed(lines):
            if len(kept) >= max_lines:
                break
            size = _nbytes(line) + (1 if kept else 0)
            if used + size > max_bytes:
                by = "bytes"
                if not kept:
                    raw = line.encode("utf-8", "surrogatepass")
                    start = len(raw) - max_bytes
                    while start < len(raw) and raw[start] & 0xC0 == 0x80:
                        start += 1
                    piece = raw[start:].decode("utf-8", "surrogatepass")
                    piece = "".join("\ufffd" if 0xD800 <= ord(c) < 0xE000 else c for c in piece)
                    kept.append(piece)
                    used = _nbytes(piece)
                    partial = True
                break
            kept.insert(0, line)
            used += size
    if len(kept) >= max_lines and used <= max_bytes:
        by = "lines"
    text = "\n".join(kept)
    return base | {
        "content": text,
        "truncated": True,
        "truncatedBy": by,
        "outputLines": len(kept),
        "outputBytes": _nbytes(text),
        "lastLinePartial": partial,
    }


_PIECES = ["a", "bc", "hello world", "é", "日本語", "😀", "\ud800", "x" * 40, " ", "\t", "\r"]


def _random_text(rng: random.Random, max_parts: int) -> str:
    parts = []
    for _ in range(rng.randint(0, max_parts)):
        parts.append(rng.choice(_PIECES) if rng.random() < 0.7 else "\n")
    return "".join(parts)


@pytest.mark.parametrize("seed", range(40))
def test_truncation_matches_naive_model(seed):
    rng = random.Random(seed)
    for _ in range(100):
        text = _random_text(rng, 60)
        max_lines = rng.choice([0, 1, 2, 3, 5, 10, 2000])
        max_bytes = rng.choice([0, 1, 2, 3, 4, 7, 10, 25, 60, 51200])
        for tail in (False, True):
            truncate = truncate_tail if tail else truncate_head
            got = truncate(text, max_lines, max_bytes).to_pi_dict()
            assert got == _model(text, max_lines, max_bytes, tail), (text, max_lines, max_bytes)


@pytest.mark.parametrize("tail", [False, True])
def test_many_lines_with_big_line_limit_uses_block_search(tail):
    # More than 4096 newlines in the window exercises the block-counting path.
    rng = random.Random(7)
    lines = ["".join(rng.choice("ab😀é") for _ in range(rng.randint(0, 6))) for _ in range(30000)]
    text = "\n".join(lines)
    truncate = truncate_tail if tail else truncate_head
    for max_lines, max_bytes in [(10000, 10**7), (25000, 10**7), (2**53 - 1, 60000), (5000, 40000)]:
        got = truncate(text, max_lines, max_bytes).to_pi_dict()
        assert got == _model(text, max_lines, max_bytes, tail)


def test_result_dataclass_is_frozen_and_has_pi_shape():
    result = truncate_tail("a\nb\nc", max_lines=2)
    with pytest.raises(AttributeError):
        result.content = "x"  # type: ignore[misc]
    assert list(result.to_pi_dict()) == [
        "content",
        "truncated",
        "truncatedBy",
        "totalLines",
        "totalBytes",
        "outputLines",
        "outputBytes",
        "lastLinePartial",
        "firstLineExceedsLimit",
        "maxLines",
        "maxBytes",
    ]
    assert (result.content, result.truncated_by, result.output_lines) == ("b\nc", "lines", 2)


def test_defaults_are_pi_limits():
    text = "x\n" * 3000
    head = truncate_head(text)
    assert (head.max_lines, head.max_bytes) == (2000, 51200)
    assert head.output_lines == 2000 and head.truncated_by == "lines"
    tail = truncate_tail(text)
    # pi 0.80.2: the trailing newline ends the last line (3000 lines, none empty).
    assert tail.total_lines == 3000 and tail.content == "\n".join(["x"] * 2000)


def test_head_first_line_too_long():
    result = truncate_head("y" * 100 + "\nshort", max_bytes=50)
    assert result.first_line_exceeds_limit and result.content == ""
    assert (result.truncated_by, result.output_lines, result.output_bytes) == ("bytes", 0, 0)


def test_tail_partial_line_starts_on_character_boundary():
    text = "é" * 30  # 60 bytes, 2 per character
    result = truncate_tail(text, max_bytes=7)
    assert result.last_line_partial
    assert result.content == "ééé" and result.output_bytes == 6


def test_tail_partial_line_replaces_lone_surrogates_like_node():
    result = truncate_tail("a\ud800" * 10, max_bytes=8)
    assert result.content == "a\ufffda\ufffd"
    assert result.output_bytes == 8


def test_whole_lines_keep_lone_surrogates():
    result = truncate_tail("drop me\nkeep \ud800 this", max_bytes=15)
    assert result.content == "keep \ud800 this"
    assert result.output_bytes == 13 and result.total_bytes == 21


def test_surrogate_pair_as_two_code_points_counts_like_js():
    # JS sees "\ud83d\ude00" as one 4-byte character.
    result = truncate_head("\ud83d\ude00\nab", max_lines=1)
    assert result.total_bytes == 7 and result.output_bytes == 4


@pytest.mark.parametrize("tail", [False, True])
def test_giant_single_line(tail):
    text = "z" * (10 * 1024 * 1024)
    result = (truncate_tail if tail else truncate_head)(text)
    assert result.total_lines == 1 and result.total_bytes == 10 * 1024 * 1024
    if tail:
        assert result.last_line_partial and result.output_bytes == DEFAULT_MAX_BYTES
        assert result.content == "z" * DEFAULT_MAX_BYTES
    else:
        assert result.first_line_exceeds_limit and result.content == ""


def test_non_ascii_large_input_uses_window_correctly():
    line = "日本語テキスト😀 done"
    text = "\n".join(f"{i} {line}" for i in range(20000))
    for tail in (False, True):
        truncate = truncate_tail if tail else truncate_head
        assert truncate(text).to_pi_dict() == _model(text, 2000, DEFAULT_MAX_BYTES, tail)


# ---------------------------------------------------------------------------
# truncate_line and format_size
# ---------------------------------------------------------------------------


def test_truncate_line():
    assert truncate_line("short") == ("short", False)
    assert truncate_line("a" * 501).text == "a" * 500 + "... [truncated]"
    assert truncate_line("a" * 500).was_truncated is False
    assert truncate_line("hello world", 5).to_pi_dict() == {
        "text": "hello... [truncated]",
        "wasTruncated": True,
    }
    # UTF-16 units: an emoji is 2, a cut inside it leaves a lone surrogate.
    assert truncate_line("😀😀", 3).text == "😀\ud83d... [truncated]"
    assert truncate_line("😀😀", 4) == ("😀😀", False)
    assert truncate_line("abc", -1).text == "ab... [truncated]"  # JS slice(0, -1)


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (0, "0B"),
        (1023, "1023B"),
        (1024, "1.0KB"),
        (3328, "3.3KB"),  # 3.25 exactly: JS toFixed rounds the tie up
        (51200, "50.0KB"),
        (1048575, "1024.0KB"),
        (1048576, "1.0MB"),
        (1310720, "1.3MB"),  # 1.25 tie
        (1258291, "1.2MB"),
        (10 * 1024 * 1024, "10.0MB"),
    ],
)
def test_format_size(size, expected):
    assert format_size(size) == expected


# ---------------------------------------------------------------------------
# Notices
# ---------------------------------------------------------------------------


def _result(**fields) -> TruncationResult:
    base = dict(
        content="out",
        truncated=True,
        truncated_by="lines",
        total_lines=5000,
        total_bytes=90000,
        output_lines=2000,
        output_bytes=40000,
        last_line_partial=False,
        first_line_exceeds_limit=False,
        max_lines=2000,
        max_bytes=51200,
    )
    return TruncationResult(**(base | fields))


def test_bash_notices():
    assert (
        bash_truncation_notice(_result(), "/tmp/x.log")
        == "[Showing lines 3001-5000 of 5000. Full output: /tmp/x.log]"
    )
    assert (
        bash_truncation_notice(_result(truncated_by="bytes", output_lines=120), "/tmp/x.log")
        == "[Showing lines 4881-5000 of 5000 (50.0KB limit). Full output: /tmp/x.log]"
    )
    partial = _result(
        truncated_by="bytes",
        total_lines=3,
        output_lines=1,
        output_bytes=51200,
        last_line_partial=True,
    )
    assert (
        bash_truncation_notice(partial, "/tmp/x.log", last_line_bytes=3 * 1024 * 1024)
        == "[Showing last 50.0KB of line 3 (line is 3.0MB). Full output: /tmp/x.log]"
    )
    assert bash_truncation_notice(_result(truncated=False, truncated_by=None), "/p") is None


def test_bash_output_and_tool_text():
    empty = truncate_tail("")
    assert bash_output_text(empty, None) == "(no output)"
    assert bash_tool_text(empty, None) == ("(no output)", False)
    assert bash_tool_text(empty, None, exit_code=2) == (
        "(no output)\n\nCommand exited with code 2",
        True,
    )
    assert bash_tool_text(empty, None, exit_code=None).is_error is False
    assert bash_tool_text(empty, None, aborted=True) == ("Command aborted", True)
    assert bash_tool_text(truncate_tail("hi"), None, timeout_seconds=1.5) == (
        "hi\n\nCommand timed out after 1.5 seconds",
        True,
    )
    big = truncate_tail("line\n" * 3000)
    text = bash_output_text(big, "/tmp/full.log")
    assert text.endswith("\n\n[Showing lines 1001-3000 of 3000. Full output: /tmp/full.log]")
    assert text.startswith("line\n")


def test_read_notices():
    result = truncate_head("l\n" * 3000)
    assert (
        read_truncation_notice(result, 1, 3001)
        == "[Showing lines 1-2000 of 3001. Use offset=2001 to continue.]"
    )
    by_bytes = truncate_head(("x" * 100 + "\n") * 1000)
    assert (
        read_truncation_notice(by_bytes, 11, 1010)
        == "[Showing lines 11-516 of 1010 (50.0KB limit). Use offset=517 to continue.]"
    )
    assert (
        read_first_line_too_long_notice(7, 60000, "big.min.js")
        == "[Line 7 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '7p' big.min.js | head -c 51200]"
    )
    assert read_more_lines_notice(12, 41) == "[12 more lines in file. Use offset=41 to continue.]"
    assert read_truncation_notice(truncate_head("small"), 1, 1) is None


def test_read_output_text():
    text = "\n".join(f"line {i}" for i in range(1, 51))
    out, trunc = read_output_text(text, "f.txt", offset=10, limit=5)
    assert out == "line 10\nline 11\nline 12\nline 13\nline 14\n\n" + (
        "[36 more lines in file. Use offset=15 to continue.]"
    )
    assert trunc is None
    out, trunc = read_output_text(text, "f.txt", offset=45, max_lines=3)
    assert out.endswith("[Showing lines 45-47 of 50. Use offset=48 to continue.]")
    assert trunc is not None and trunc.output_lines == 3
    out, _ = read_output_text("a\n" + "b" * 60000, "f.txt", offset=2)
    assert out.startswith("[Line 2 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '2p' f.txt")
    with pytest.raises(ValueError, match=r"Offset 99 is beyond end of file \(50 lines total\)"):
        read_output_text(text, "f.txt", offset=99)


def test_grep_find_ls_notices():
    assert grep_notice() is None
    assert grep_notice(100, True, True) == (
        "[100 matches limit reached. Use limit=200 for more, or refine pattern. "
        "50.0KB limit reached. Some lines truncated to 500 chars. Use read tool to see full lines]"
    )
    assert find_notice(1000) == (
        "[1000 results limit reached. Use limit=2000 for more, or refine pattern]"
    )
    assert find_notice(bytes_truncated=True) == "[50.0KB limit reached]"
    assert ls_notice(500, True) == (
        "[500 entries limit reached. Use limit=1000 for more. 50.0KB limit reached]"
    )


# ---------------------------------------------------------------------------
# StreamingTail
# ---------------------------------------------------------------------------


def _feed_all(acc: StreamingTail, data: bytes, rng: random.Random, max_chunk: int) -> None:
    pos = 0
    while pos < len(data):
        step = rng.randint(1, max_chunk)
        acc.feed(data[pos : pos + step])
        pos += step


def test_streaming_nothing_printed(tmp_path):
    acc = StreamingTail(output_path=tmp_path)
    snap = acc.snapshot()
    assert snap.content == "" and snap.total_bytes == 0 and snap.total_lines == 0
    result = acc.finish()
    assert result.text == "(no output)" and result.notice is None
    assert result.full_output_path is None and not result.truncation.truncated
    assert list(tmp_path.iterdir()) == []
    assert result.tool_text(exit_code=1) == ("(no output)\n\nCommand exited with code 1", True)


def test_streaming_small_output_not_spilled(tmp_path):
    acc = StreamingTail(output_path=tmp_path)
    acc.feed(b"hello\n")
    acc.feed(b"world")
    result = acc.finish()
    assert result.text == "hello\nworld"
    assert result.truncation.to_pi_dict() == truncate_tail("hello\nworld").to_pi_dict()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("seed", range(6))
def test_streaming_matches_truncate_tail_and_file_is_exact(tmp_path, seed):
    rng = random.Random(seed)
    max_lines = rng.choice([3, 10, 50])
    max_bytes = rng.choice([16, 100, 1000])
    pieces = [b"short\n", "ü日本😀\n".encode(), b"x" * 300, b"\n", b"tail line"]
    data = b"".join(rng.choice(pieces) for _ in range(rng.randint(50, 400)))
    acc = StreamingTail(max_lines, max_bytes, output_path=tmp_path)
    fed = b""
    pos = 0
    while pos < len(data):
        step = rng.randint(1, 97)
        acc.feed(data[pos : pos + step])
        fed += data[pos : pos + step]
        pos += step
        if rng.random() < 0.1:
            snap = acc.snapshot()
            # Mid-stream: an unfinished character is held back, not replaced.
            assert "\ufffd" not in snap.content
            expected = truncate_tail(fed.decode("utf-8", "ignore"), max_lines, max_bytes)
            if fed.decode("utf-8", "ignore") == fed.decode("utf-8", "replace"):
                assert snap.truncation == expected
    result = acc.finish()
    expected = truncate_tail(data.decode(), max_lines, max_bytes)
    assert result.truncation == expected
    assert result.truncation.truncated
    with open(result.full_output_path, "rb") as fh:
        assert fh.read() == data
    assert result.text == bash_output_text(expected, result.full_output_path, acc.last_line_bytes)


def test_streaming_spills_on_line_limit_alone(tmp_path):
    acc = StreamingTail(max_lines=5, max_bytes=10_000, output_path=tmp_path)
    data = b"".join(b"%d\n" % i for i in range(10))
    acc.feed(data)
    result = acc.finish()
    assert result.truncation.truncated_by == "lines"
    assert result.notice == f"[Showing lines 6-10 of 10. Full output: {result.full_output_path}]"
    with open(result.full_output_path, "rb") as fh:
        assert fh.read() == data


def test_streaming_invalid_utf8_and_split_characters(tmp_path):
    acc = StreamingTail(max_bytes=64, output_path=tmp_path)
    euro = "€".encode()  # 3 bytes
    acc.feed(b"bad \xff\xfe bytes\n" + euro[:1])
    snap = acc.snapshot()
    assert snap.content == "bad \ufffd\ufffd bytes\n"  # incomplete € held back
    acc.feed(euro[1:2])
    acc.feed(euro[2:] + b" ok\n\xc3")  # ends with half of a two-byte char
    result = acc.finish()
    assert result.truncation.content == "bad \ufffd\ufffd bytes\n€ ok\n\ufffd"
    assert result.full_output_path is None
    assert acc.total_bytes == 21


def test_streaming_invalid_bytes_everywhere_never_crash(tmp_path):
    rng = random.Random(3)
    data = bytes(rng.getrandbits(8) for _ in range(300_000))
    acc = StreamingTail(max_lines=100, max_bytes=4096, output_path=tmp_path)
    _feed_all(acc, data, rng, 5000)
    for _ in range(3):
        acc.snapshot()
    result = acc.finish()
    assert result.truncation.truncated and result.truncation.output_bytes <= 4096
    assert result.truncation.total_bytes == len(data)
    assert result.truncation.total_lines == data.count(b"\n") + 1
    with open(result.full_output_path, "rb") as fh:
        assert fh.read() == data


def test_streaming_single_ten_megabyte_line(tmp_path):
    acc = StreamingTail(output_path=tmp_path)
    line = b"0123456789abcdef" * (10 * 1024 * 1024 // 16)
    for pos in range(0, len(line), 65536):
        acc.feed(line[pos : pos + 65536])
    result = acc.finish()
    trunc = result.truncation
    assert trunc.last_line_partial and trunc.total_lines == 1
    assert trunc.output_bytes == DEFAULT_MAX_BYTES and trunc.content == line[-51200:].decode()
    assert result.notice == (
        f"[Showing last 50.0KB of line 1 (line is 10.0MB). Full output: {result.full_output_path}]"
    )
    assert result.text == trunc.content + "\n\n" + result.notice
    assert os.path.getsize(result.full_output_path) == len(line)


def test_streaming_memory_is_bounded(tmp_path):
    acc = StreamingTail(output_path=tmp_path)
    chunk = b"".join(b"row %06d of generated output\n" % i for i in range(3000))[:65536]
    total = 50 * 1024 * 1024
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        for index in range(total // len(chunk)):
            acc.feed(chunk)
            if index % 50 == 0:
                acc.snapshot()
        result = acc.finish()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Rolling buffer (<= 4 x 50 KiB + one chunk) plus transient decode copies.
    assert peak - base < 1024 * 1024, peak - base
    assert os.path.getsize(result.full_output_path) == total
    assert result.truncation.total_bytes == total


def test_streaming_output_path_options(tmp_path):
    calls = []

    def make_path():
        calls.append(1)
        return tmp_path / "custom.log"

    acc = StreamingTail(max_bytes=10, output_path=make_path)
    acc.feed(b"12345")
    assert calls == [] and acc.full_output_path is None
    acc.feed(b"678901")
    acc.feed(b"more")
    assert calls == [1]
    result = acc.finish()
    assert result.full_output_path == str(tmp_path / "custom.log")
    assert (tmp_path / "custom.log").read_bytes() == b"12345678901more"
    assert stat.S_IMODE(os.stat(result.full_output_path).st_mode) == 0o600

    acc = StreamingTail(max_bytes=10, output_path=tmp_path, file_prefix="pi-bash")
    acc.feed(b"x" * 20)
    name = os.path.basename(acc.finish().full_output_path)
    assert name.startswith("pi-bash-") and name.endswith(".log")


def test_streaming_feed_after_finish_rejected(tmp_path):
    acc = StreamingTail(output_path=tmp_path)
    acc.finish()
    with pytest.raises(RuntimeError):
        acc.feed(b"late")


def test_streaming_context_manager_closes_file(tmp_path):
    with StreamingTail(max_bytes=4, output_path=tmp_path) as acc:
        acc.feed(b"0123456789")
        path = acc.full_output_path
    assert path is not None
    with open(path, "rb") as fh:
        assert fh.read() == b"0123456789"


def test_streaming_accepts_memoryview_and_bytearray(tmp_path):
    acc = StreamingTail(output_path=tmp_path)
    acc.feed(memoryview(b"ab\n"))
    acc.feed(bytearray(b"cd"))
    assert acc.finish().text == "ab\ncd"


def test_streaming_long_last_line_ending_in_newline_keeps_its_end(tmp_path):
    """pi 0.80.2's rule: the final newline ends the last line, it is no empty line of its own."""
    data = b"first\n" + b"y" * 500 + b"z\n"
    acc = StreamingTail(max_lines=10, max_bytes=16, output_path=tmp_path)
    for pos in range(0, len(data), 7):
        acc.feed(data[pos : pos + 7])
    result = acc.finish()
    assert result.truncation == truncate_tail(data.decode(), 10, 16)
    assert result.truncation.last_line_partial and result.truncation.content == "y" * 15 + "z"
    assert result.truncation.total_lines == 2


# The full-output file's cap (PIWEB_FULL_OUTPUT_MAX_MB) in the core's StreamingTail: past
# it the file keeps its tail behind a header, on disk and in memory bounded by the cap.
CAP = 256 * 1024


def _feed_lines(tail, count, chunk_lines=997):
    line = 0
    while line < count:
        upto = min(count, line + chunk_lines)
        tail.feed(b"".join(b"line %d\n" % i for i in range(line, upto)))
        line = upto


def test_the_file_keeps_the_last_whole_lines_and_says_what_was_dropped(tmp_path):
    path = tmp_path / "out.log"
    tail = StreamingTail(output_path=str(path), max_file_bytes=CAP)
    _feed_lines(tail, 200_000)
    result = tail.finish()
    data = path.read_bytes()
    assert len(data) <= CAP + CAPPED_HEADER_BYTES
    header, body = data[:CAPPED_HEADER_BYTES], data[CAPPED_HEADER_BYTES:]
    assert header.endswith(b"\n") and header.count(b"\n") == 1
    lines = body.split(b"\n")[:-1]
    first = int(lines[0].split()[1])
    assert [int(x.split()[1]) for x in lines] == list(range(first, 200_000))
    dropped = sum(len(b"line %d\n" % i) for i in range(first))
    assert f"the first {dropped} bytes ({first} lines) were dropped".encode() in header
    assert result.dropped_bytes == dropped
    assert result.notice.endswith(f"the first {first} lines were dropped)]")
    assert result.tool_text().text.endswith(result.notice)


def test_one_huge_line_is_cut_anywhere_and_memory_stays_bounded(tmp_path):
    path = tmp_path / "zeros.log"
    tail = StreamingTail(output_path=str(path), max_file_bytes=CAP)
    block = b"\0" * (1 << 20)
    tracemalloc.start()
    for _ in range(64):  # 64 MB of one line, as `head -c 1500M /dev/zero` prints
        tail.feed(block)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    result = tail.finish()
    assert peak < 4 * (1 << 20)  # a chunk and the copy buffer, not the output
    size = path.stat().st_size
    assert CAP // 2 <= size - CAPPED_HEADER_BYTES <= CAP
    assert result.dropped_bytes == 64 * (1 << 20) - (size - CAPPED_HEADER_BYTES)


def test_without_a_cap_or_under_it_nothing_changes(tmp_path):
    for cap in (None, 10 * CAP):
        path = tmp_path / f"whole-{cap}.log"
        tail = StreamingTail(output_path=str(path), max_file_bytes=cap)
        _feed_lines(tail, 100_000)
        result = tail.finish()
        assert path.read_bytes() == b"".join(b"line %d\n" % i for i in range(100_000))
        assert result.file_note is None and "dropped" not in result.notice
