"""core/file_marks.py: the follower's fingerprints of a growing pi session file, the end of
its last complete line, and a byte range read as a file of its own (pure, no database)."""

import io

from sessions_app.core import file_marks
from sessions_app.core.file_marks import BLOCK, RangeReader, complete_length, marks_at


def test_an_append_keeps_the_marks_and_a_rewrite_changes_them():
    original = b"".join(b'{"n": %d}\n' % i for i in range(3000))  # several blocks
    offset = len(original)
    before = marks_at(io.BytesIO(original), offset)
    appended = io.BytesIO(original + b'{"n": "new"}\n')
    assert marks_at(appended, offset) == before
    rewritten_head = io.BytesIO(b"X" + original[1:])
    assert marks_at(rewritten_head, offset).head_hash != before.head_hash
    changed_tail = original[:-3] + b"8}\n"
    assert marks_at(io.BytesIO(changed_tail), offset).tail_hash != before.tail_hash
    # Only the block that ends at the offset counts for the tail: a change before it does not.
    early_change = original[:BLOCK] + b"?" + original[BLOCK + 1 :]
    assert marks_at(io.BytesIO(early_change), offset).tail_hash == before.tail_hash


def test_marks_of_a_short_or_empty_file():
    short = io.BytesIO(b"one line\n")
    head, tail = marks_at(short, 9)
    assert head == tail  # the first block is the block that ends at the offset
    assert marks_at(io.BytesIO(b""), 0) == marks_at(io.BytesIO(b"anything"), 0)


def test_complete_length_stops_after_the_last_newline(monkeypatch):
    data = b"first\nsecond\npartial"
    fh = io.BytesIO(data)
    assert complete_length(fh, 0, len(data)) == len(b"first\nsecond\n")
    assert complete_length(fh, 0, 6) == 6  # the newline is the range's last byte
    assert complete_length(fh, 13, len(data)) == 13  # a line still being written
    # Far back from the end: found across steps of the backwards search.
    monkeypatch.setattr(file_marks, "_BACK_STEP", 4)
    long = b"x" * 50 + b"\n" + b"y" * 50
    assert complete_length(io.BytesIO(long), 0, len(long)) == 51
    assert complete_length(io.BytesIO(long), 51, len(long)) == 51


def test_a_range_reads_like_a_file_and_counts_each_newline_once():
    data = b"skip\na\nb\nc\nafter"
    start, end = 5, 11  # "a\nb\nc\n"
    reader = RangeReader(io.BytesIO(data), start, end)
    assert reader.readable() and reader.seekable()
    assert reader.read(3) == b"a\nb" and reader.tell() == 3 and reader.newlines == 1
    reader.seek(0)
    assert reader.read() == b"a\nb\nc\n" and reader.newlines == 3  # the rewind counted once
    assert reader.read() == b""
    assert reader.seek(100) == end - start  # seeks stay inside the range
    buffer = bytearray(4)
    reader.seek(2)
    assert reader.readinto(buffer) == 4 and bytes(buffer) == b"b\nc\n"
    lines = list(io.BufferedReader(RangeReader(io.BytesIO(data), start, end)))
    assert lines == [b"a\n", b"b\n", b"c\n"]
