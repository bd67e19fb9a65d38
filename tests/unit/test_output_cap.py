"""The full-output file's cap (PIWEB_FULL_OUTPUT_MAX_MB) in the core's StreamingTail: past
it the file keeps its tail behind a header, on disk and in memory bounded by the cap."""

import tracemalloc

from sessions_app.core.truncate import CAPPED_HEADER_BYTES, StreamingTail

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
