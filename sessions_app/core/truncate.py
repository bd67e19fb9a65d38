"""Tool output truncation, following pi 0.80.2 (SPEC section 5).

Two limits, whichever is hit first: ``max_lines`` (2000) or ``max_bytes``
(51,200 bytes of UTF-8).  Lines are split on ``"\\n"``; a trailing newline
ends the last line instead of starting an empty one, so ``""`` has no lines,
``"a\\n"`` one and ``"a\\n\\n"`` two.  A truncated result never ends with that
trailing newline.

* :func:`truncate_head` keeps whole lines from the start (file reads);
* :func:`truncate_tail` keeps whole lines from the end (bash output), or the
  last bytes of the last line when that line alone is too big;
* :func:`truncate_line` cuts one line to ``max_chars`` UTF-16 code units;
* :class:`StreamingTail` accumulates bash output with bounded memory and
  spills the full output to a file once it is truncated;
* the ``*_notice`` helpers build the bracketed notices the tools append.

Work is proportional to what is kept: beyond one C-speed pass over the input
(counting newlines, and measuring UTF-8 size for non-ASCII text) the input is
never split into lines.  Byte sizes follow Node's ``Buffer.byteLength``: a
lone surrogate (possible in strings decoded from JSON) counts 3 bytes.

Pure Python, no Django.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from .jsutil import js_number_to_string, js_to_fixed, utf8_len

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "FIND_DEFAULT_LIMIT",
    "GREP_DEFAULT_LIMIT",
    "GREP_MAX_LINE_LENGTH",
    "LS_DEFAULT_LIMIT",
    "BashToolText",
    "LineTruncation",
    "StreamSnapshot",
    "StreamingResult",
    "StreamingTail",
    "TruncationResult",
    "append_notice",
    "bash_output_text",
    "bash_tool_text",
    "bash_truncation_notice",
    "find_notice",
    "format_size",
    "grep_notice",
    "ls_notice",
    "read_first_line_too_long_notice",
    "read_more_lines_notice",
    "read_output_text",
    "read_truncation_notice",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024
GREP_MAX_LINE_LENGTH = 500
GREP_DEFAULT_LIMIT = 100
FIND_DEFAULT_LIMIT = 1000
LS_DEFAULT_LIMIT = 500
# The header line of a full-output file that passed its cap (fixed size, so it can be
# rewritten in place as more is dropped).
CAPPED_HEADER_BYTES = 256

TruncatedBy = Literal["lines", "bytes"]

_SURROGATES = re.compile("[\ud800-\udfff]")


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TruncationResult:
    """Outcome of :func:`truncate_head` / :func:`truncate_tail` (pi's TruncationResult)."""

    content: str
    truncated: bool
    truncated_by: TruncatedBy | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool
    first_line_exceeds_limit: bool
    max_lines: int
    max_bytes: int

    def to_pi_dict(self) -> dict[str, Any]:
        """pi's camelCase JSON shape, keys in pi's order."""
        return {
            "content": self.content,
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }


class LineTruncation(NamedTuple):
    """Outcome of :func:`truncate_line`; unpacks as ``text, was_truncated``."""

    text: str
    was_truncated: bool

    def to_pi_dict(self) -> dict[str, Any]:
        return {"text": self.text, "wasTruncated": self.was_truncated}


# --------------------------------------------------------------------------
# Sizes
# --------------------------------------------------------------------------


def format_size(num_bytes: int | float) -> str:
    """pi's formatSize: ``512B``, ``50.0KB``, ``1.2MB`` (JS toFixed rounding)."""
    if num_bytes < 1024:
        return f"{js_number_to_string(num_bytes)}B"
    if num_bytes < 1024 * 1024:
        return f"{js_to_fixed(num_bytes / 1024, 1)}KB"
    return f"{js_to_fixed(num_bytes / (1024 * 1024), 1)}MB"


# --------------------------------------------------------------------------
# Core: find cut points without splitting the input
# --------------------------------------------------------------------------

_SMALL_N = 4096  # up to this many newlines: plain find/rfind loop
_MIN_BLOCK = 1 << 16  # ranges this small are always scanned with find/rfind


def _nth_newline_forward(buf: Any, nl: Any, n: int, lo: int, hi: int) -> int:
    """Index of the ``n``-th newline (n >= 1) in ``buf[lo:hi]``, or -1."""
    while True:
        if n <= _SMALL_N or hi - lo <= _MIN_BLOCK:
            pos = lo - 1
            find = buf.find
            for _ in range(n):
                pos = find(nl, pos + 1, hi)
                if pos < 0:
                    return -1
            return pos
        # Count newlines block by block to locate the block holding the n-th.
        block = max(_MIN_BLOCK, (hi - lo) >> 4)
        start = lo
        while start < hi:
            end = min(hi, start + block)
            found = buf.count(nl, start, end)
            if found >= n:
                lo, hi = start, end
                break
            n -= found
            start = end
        else:
            return -1


def _nth_newline_backward(buf: Any, nl: Any, n: int, lo: int, hi: int) -> int:
    """Index of the ``n``-th newline (n >= 1) counting back from ``hi`` in ``buf[lo:hi]``."""
    if lo >= hi:
        return -1
    while True:
        if n <= _SMALL_N or hi - lo <= _MIN_BLOCK:
            pos = hi
            rfind = buf.rfind
            for _ in range(n):
                pos = rfind(nl, lo, pos)
                if pos < 0:
                    return -1
            return pos
        block = max(_MIN_BLOCK, (hi - lo) >> 4)
        end = hi
        while end > lo:
            start = max(lo, end - block)
            found = buf.count(nl, start, end)
            if found >= n:
                lo, hi = start, end
                break
            n -= found
            end = start
        else:
            return -1


def _encode_js(text: str) -> bytes:
    """UTF-8 bytes with Node's sizes: lone surrogates kept as 3-byte sequences."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        return joined.encode("utf-8", "surrogatepass")


def _decode_js(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def _decode_partial(data: bytes) -> str:
    """A partial line goes through a Node Buffer: lone surrogates become U+FFFD."""
    text = data.decode("utf-8", "surrogatepass")
    if not text.isascii() and _SURROGATES.search(text):
        text = _SURROGATES.sub("\ufffd", text)
    return text


def _result(
    content: str,
    truncated_by: TruncatedBy | None,
    total_lines: int,
    total_bytes: int,
    output_lines: int,
    output_bytes: int,
    max_lines: int,
    max_bytes: int,
    *,
    last_line_partial: bool = False,
    first_line_exceeds_limit: bool = False,
) -> TruncationResult:
    return TruncationResult(
        content=content,
        truncated=truncated_by is not None,
        truncated_by=truncated_by,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=output_lines,
        output_bytes=output_bytes,
        last_line_partial=last_line_partial,
        first_line_exceeds_limit=first_line_exceeds_limit,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def _final_truncated_by(
    truncated_by: TruncatedBy, output_lines: int, output_bytes: int, max_lines: int, max_bytes: int
) -> TruncatedBy:
    # pi relabels the result "lines" whenever the output reached the line
    # limit within the byte limit, even after a byte cut (tail, max_lines=1).
    if output_lines >= max_lines and output_bytes <= max_bytes:
        return "lines"
    return truncated_by


def _line_count(text: str) -> int:
    """pi 0.80.2's line count: ``""`` has none, a trailing newline ends the last line."""
    if not text:
        return 0
    newlines = text.count("\n")
    return newlines if text[-1] == "\n" else newlines + 1


def _whole_body(
    body: str, total_lines: int, total_bytes: int, body_bytes: int, max_lines: int, max_bytes: int
) -> TruncationResult:
    """Every line fits once the trailing newline is dropped.

    pi's loop then ends without a byte cut, so the result is labelled "lines".
    """
    return _result(
        body, "lines", total_lines, total_bytes, total_lines, body_bytes, max_lines, max_bytes
    )


def _sizes(text: str) -> tuple[int, int, int]:
    """(lines, UTF-8 bytes, 1 if it ends with a newline else 0) of ``text``."""
    return _line_count(text), utf8_len(text), 1 if text.endswith("\n") else 0


def _whole(text: str, lines: int, size: int, max_lines: int, max_bytes: int) -> TruncationResult:
    return _result(text, None, lines, size, lines, size, max_lines, max_bytes)


def truncate_head(
    text: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep whole lines from the start of ``text`` (pi's truncateHead).

    If the first line alone is over ``max_bytes`` the content is empty and
    ``first_line_exceeds_limit`` is set.  A truncated result never ends with
    a newline.
    """
    total_lines, total_bytes, trailing = _sizes(text)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _whole(text, total_lines, total_bytes, max_lines, max_bytes)
    # The lines are those of ``body``: the text without its trailing newline.
    body_chars = len(text) - trailing
    body_bytes = total_bytes - trailing

    # Everything kept lies in the first max_bytes bytes (so max_bytes chars),
    # and the newline ending it at byte index <= max_bytes.
    if text.isascii():
        buf: Any = text
        nl: Any = "\n"
        decode: Callable[[Any], str] = str
        body_end = body_chars
    else:
        buf = _encode_js(text[: max(0, min(max_bytes + 1, body_chars))])
        nl = b"\n"
        decode = _decode_js
        body_end = len(buf)
    window_hi = max(0, min(body_end, max_bytes + 1))

    if buf.find(nl, 0, window_hi) < 0 and body_bytes > max_bytes:
        # pi checks the whole first line; it is longer than max_bytes exactly
        # when no newline shows up within the first max_bytes + 1 bytes.
        return _result(
            "",
            "bytes",
            total_lines,
            total_bytes,
            0,
            0,
            max_lines,
            max_bytes,
            first_line_exceeds_limit=True,
        )
    if max_lines <= 0:
        return _result("", "lines", total_lines, total_bytes, 0, 0, max_lines, max_bytes)
    if total_lines <= max_lines and body_bytes <= max_bytes:
        return _whole_body(
            text[:body_chars], total_lines, total_bytes, body_bytes, max_lines, max_bytes
        )

    end = _nth_newline_forward(buf, nl, max_lines, 0, window_hi)
    if end >= 0:
        truncated_by: TruncatedBy = "lines"
        output_lines = max_lines
    else:
        truncated_by = "bytes"
        end = buf.rfind(nl, 0, window_hi)
        if end < 0:  # pragma: no cover - excluded by the first-line check
            end = 0
        output_lines = buf.count(nl, 0, end) + 1
    truncated_by = _final_truncated_by(truncated_by, output_lines, end, max_lines, max_bytes)
    return _result(
        decode(buf[:end]),
        truncated_by,
        total_lines,
        total_bytes,
        output_lines,
        end,
        max_lines,
        max_bytes,
    )


def _tail_of_buffer(
    buf: Any,
    size: int,
    nl: Any,
    decode: Callable[[Any], str],
    decode_partial: Callable[[Any], str],
    total_lines: int,
    total_bytes: int,
    max_lines: int,
    max_bytes: int,
) -> TruncationResult:
    """Tail truncation of the lines that end at ``buf[size]`` (the body's end).

    ``buf[:size]`` must reach back at least ``max_bytes + 1`` bytes unless it
    holds the whole body.  Totals are given by the caller.
    """
    if max_lines <= 0:
        return _result("", "lines", total_lines, total_bytes, 0, 0, max_lines, max_bytes)
    # Kept whole lines start right after a newline at index >= lo_raw.
    lo_raw = size - max_bytes - 1
    cut = _nth_newline_backward(buf, nl, max_lines, max(0, lo_raw), size)
    if cut >= 0:
        start = cut + 1
        output_lines = max_lines
        truncated_by: TruncatedBy = "lines"
    elif lo_raw < 0:  # pragma: no cover - whole body fits: handled by the callers
        start = 0
        output_lines = buf.count(nl, 0, size) + 1
        truncated_by = "lines"
    else:
        cut = buf.find(nl, lo_raw, size)
        if cut < 0:
            # The last line alone is over the limit: keep its last bytes,
            # starting on a character boundary.
            start = size - max_bytes
            if isinstance(buf, bytes):
                while start < size and (buf[start] & 0xC0) == 0x80:
                    start += 1
                content = decode_partial(buf[start:size])
            else:
                content = buf[start:size]
            output_bytes = max(0, size - start)
            truncated_by = _final_truncated_by("bytes", 1, output_bytes, max_lines, max_bytes)
            return _result(
                content,
                truncated_by,
                total_lines,
                total_bytes,
                1,
                output_bytes,
                max_lines,
                max_bytes,
                last_line_partial=True,
            )
        start = cut + 1
        output_lines = buf.count(nl, start, size) + 1
        truncated_by = "bytes"
    output_bytes = size - start
    truncated_by = _final_truncated_by(
        truncated_by, output_lines, output_bytes, max_lines, max_bytes
    )
    return _result(
        decode(buf[start:size]),
        truncated_by,
        total_lines,
        total_bytes,
        output_lines,
        output_bytes,
        max_lines,
        max_bytes,
    )


def truncate_tail(
    text: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep whole lines from the end of ``text`` (pi's truncateTail).

    If the last line alone is over ``max_bytes``, keep its last bytes (from a
    UTF-8 character boundary) and set ``last_line_partial``.  A truncated
    result never ends with a newline (the trailing one ends the last line).
    """
    total_lines, total_bytes, trailing = _sizes(text)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _whole(text, total_lines, total_bytes, max_lines, max_bytes)
    body_chars = len(text) - trailing
    body_bytes = total_bytes - trailing
    if 0 < max_lines and total_lines <= max_lines and body_bytes <= max_bytes:
        return _whole_body(
            text[:body_chars], total_lines, total_bytes, body_bytes, max_lines, max_bytes
        )
    if text.isascii():
        return _tail_of_buffer(
            text, body_chars, "\n", str, str, total_lines, total_bytes, max_lines, max_bytes
        )
    # Kept bytes (<= max_bytes) plus the newline before them are within the
    # last max_bytes + 1 characters of the body: only that window is encoded.
    window = _encode_js(text[max(0, body_chars - max(0, max_bytes) - 1) : body_chars])
    return _tail_of_buffer(
        window,
        len(window),
        b"\n",
        _decode_js,
        _decode_partial,
        total_lines,
        total_bytes,
        max_lines,
        max_bytes,
    )


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> LineTruncation:
    """Cut ``line`` to ``max_chars`` UTF-16 code units and add ``... [truncated]``.

    Like JS ``slice``, a cut inside a surrogate pair leaves a lone surrogate.
    """
    if line.isascii():
        if len(line) <= max_chars:
            return LineTruncation(line, False)
        # Python slicing matches JS slice(0, n), negative n included.
        return LineTruncation(f"{line[:max_chars]}... [truncated]", True)
    units = line.encode("utf-16-le", "surrogatepass")
    if len(units) >> 1 <= max_chars:
        return LineTruncation(line, False)
    head = units[: 2 * max_chars].decode("utf-16-le", "surrogatepass")
    return LineTruncation(f"{head}... [truncated]", True)


# --------------------------------------------------------------------------
# Notices (text appended to tool results for the model)
# --------------------------------------------------------------------------


def append_notice(text: str, notice: str | None) -> str:
    """``text`` followed by a blank line and ``notice`` (if any), as pi appends them."""
    return f"{text}\n\n{notice}" if notice else text


def bash_truncation_notice(
    result: TruncationResult,
    full_output_path: str | os.PathLike[str] | None,
    last_line_bytes: int | None = None,
    file_note: str | None = None,
) -> str | None:
    """The bash tool's notice for a tail-truncated output, or None.

    ``last_line_bytes`` is the full size of the last line, shown for a
    partial last line (defaults to the shown bytes when unknown).
    ``file_note`` (piweb's, not pi's) is added inside the brackets when the
    full-output file does not hold everything (it passed its cap).
    """
    if not result.truncated:
        return None
    notice = _pi_bash_notice(result, full_output_path, last_line_bytes)
    return f"{notice[:-1]}; {file_note}]" if file_note else notice


def _pi_bash_notice(
    result: TruncationResult,
    full_output_path: str | os.PathLike[str] | None,
    last_line_bytes: int | None,
) -> str:
    path = _path_text(full_output_path)
    end_line = result.total_lines
    start_line = result.total_lines - result.output_lines + 1
    if result.last_line_partial:
        line_size = format_size(result.output_bytes if last_line_bytes is None else last_line_bytes)
        return (
            f"[Showing last {format_size(result.output_bytes)} of line {end_line} "
            f"(line is {line_size}). Full output: {path}]"
        )
    if result.truncated_by == "lines":
        return (
            f"[Showing lines {start_line}-{end_line} of {result.total_lines}. Full output: {path}]"
        )
    return (
        f"[Showing lines {start_line}-{end_line} of {result.total_lines} "
        f"({format_size(result.max_bytes)} limit). Full output: {path}]"
    )


def bash_output_text(
    result: TruncationResult,
    full_output_path: str | os.PathLike[str] | None,
    last_line_bytes: int | None = None,
    empty_text: str = "(no output)",
    file_note: str | None = None,
) -> str:
    """Tail-truncated output (``empty_text`` when there is none) plus the notice."""
    text = result.content or empty_text
    notice = bash_truncation_notice(result, full_output_path, last_line_bytes, file_note)
    return append_notice(text, notice)


class BashToolText(NamedTuple):
    """Text of a bash tool result for the model; ``is_error`` as pi throws."""

    text: str
    is_error: bool


def bash_tool_text(
    result: TruncationResult,
    full_output_path: str | os.PathLike[str] | None,
    *,
    last_line_bytes: int | None = None,
    exit_code: int | None = 0,
    aborted: bool = False,
    timeout_seconds: float | None = None,
    file_note: str | None = None,
) -> BashToolText:
    """The bash tool result text pi gives the model.

    * success (exit 0, or no exit code): output or ``(no output)``, plus notice;
    * non-zero exit: that text, a blank line, ``Command exited with code N``
      (an error result);
    * aborted / timed out (pass ``timeout_seconds``): the output without the
      ``(no output)`` placeholder, then ``Command aborted`` or
      ``Command timed out after N seconds`` (error results).
    """
    if aborted or timeout_seconds is not None:
        text = bash_output_text(
            result, full_output_path, last_line_bytes, empty_text="", file_note=file_note
        )
        if aborted or timeout_seconds is None:
            status = "Command aborted"
        else:
            status = f"Command timed out after {js_number_to_string(timeout_seconds)} seconds"
        return BashToolText(_append_status(text, status), True)
    text = bash_output_text(result, full_output_path, last_line_bytes, file_note=file_note)
    if exit_code is not None and exit_code != 0:
        return BashToolText(_append_status(text, f"Command exited with code {exit_code}"), True)
    return BashToolText(text, False)


def _append_status(text: str, status: str) -> str:
    return f"{text}\n\n{status}" if text else status


def _path_text(path: str | os.PathLike[str] | None) -> str:
    # pi interpolates an undefined path as "undefined"; we never spill-less
    # truncate in StreamingTail, but keep the output well-defined anyway.
    return "undefined" if path is None else os.fspath(path)


def read_first_line_too_long_notice(
    line_number: int,
    line_bytes: int,
    path: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str:
    """The read tool's whole result when the line at ``offset`` is over the limit."""
    return (
        f"[Line {line_number} is {format_size(line_bytes)}, exceeds {format_size(max_bytes)} "
        f"limit. Use bash: sed -n '{line_number}p' {path} | head -c {max_bytes}]"
    )


def read_truncation_notice(
    result: TruncationResult, start_line: int, total_file_lines: int
) -> str | None:
    """The read tool's continuation notice (``start_line`` is 1-based), or None."""
    if not result.truncated or result.first_line_exceeds_limit:
        return None
    end_line = start_line + result.output_lines - 1
    next_offset = end_line + 1
    if result.truncated_by == "lines":
        return (
            f"[Showing lines {start_line}-{end_line} of {total_file_lines}. "
            f"Use offset={next_offset} to continue.]"
        )
    return (
        f"[Showing lines {start_line}-{end_line} of {total_file_lines} "
        f"({format_size(result.max_bytes)} limit). Use offset={next_offset} to continue.]"
    )


def read_more_lines_notice(remaining_lines: int, next_offset: int) -> str:
    """The read tool's notice when a user ``limit`` stopped before the end of file."""
    return f"[{remaining_lines} more lines in file. Use offset={next_offset} to continue.]"


def read_output_text(
    text: str,
    path: str,
    offset: int | None = None,
    limit: int | None = None,
    max_lines: int = DEFAULT_MAX_LINES,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> tuple[str, TruncationResult | None]:
    """The read tool's text result for a decoded file ``text`` (pi's read.ts).

    ``offset`` is 1-based; ``limit`` is a line count.  Returns the text and
    the truncation result when it was truncated.  Raises ValueError when the
    offset is beyond the end of the file, with pi's message.
    """
    all_lines = text.split("\n")
    total_file_lines = len(all_lines)
    start = max(0, offset - 1) if offset else 0
    if start >= total_file_lines:
        raise ValueError(f"Offset {offset} is beyond end of file ({total_file_lines} lines total)")
    if limit is not None:
        end = min(start + limit, total_file_lines)
        selected = "\n".join(all_lines[start:end])
        user_limited: int | None = end - start
    else:
        selected = "\n".join(all_lines[start:]) if start else text
        user_limited = None
    result = truncate_head(selected, max_lines, max_bytes)
    start_display = start + 1
    if result.first_line_exceeds_limit:
        first_line_bytes = utf8_len(all_lines[start])
        notice = read_first_line_too_long_notice(start_display, first_line_bytes, path, max_bytes)
        return notice, result
    if result.truncated:
        return append_notice(
            result.content, read_truncation_notice(result, start_display, total_file_lines)
        ), result
    if user_limited is not None and start + user_limited < total_file_lines:
        remaining = total_file_lines - (start + user_limited)
        notice = read_more_lines_notice(remaining, start + user_limited + 1)
        return append_notice(result.content, notice), None
    return result.content, None


def _cap_notice(
    limit_reached: int | None,
    noun: str,
    advice: str,
    bytes_truncated: bool,
    max_bytes: int,
    *more: str,
) -> str | None:
    """A listing tool's notice: its count cap (``noun`` such as "matches"), the byte
    cap, then any ``more`` parts; None when nothing was cut."""
    parts = []
    if limit_reached is not None:
        parts.append(
            f"{limit_reached} {noun} limit reached. Use limit={limit_reached * 2} for more{advice}"
        )
    if bytes_truncated:
        parts.append(f"{format_size(max_bytes)} limit reached")
    parts.extend(more)
    return f"[{'. '.join(parts)}]" if parts else None


def grep_notice(
    match_limit_reached: int | None = None,
    bytes_truncated: bool = False,
    lines_truncated: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str | None:
    """The grep tool's notice: match cap, byte cap, long lines cut."""
    lines = (
        (f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines",)
        if lines_truncated
        else ()
    )
    return _cap_notice(
        match_limit_reached, "matches", ", or refine pattern", bytes_truncated, max_bytes, *lines
    )


def find_notice(
    result_limit_reached: int | None = None,
    bytes_truncated: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str | None:
    """The find tool's notice: result cap, byte cap."""
    return _cap_notice(
        result_limit_reached, "results", ", or refine pattern", bytes_truncated, max_bytes
    )


def ls_notice(
    entry_limit_reached: int | None = None,
    bytes_truncated: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str | None:
    """The ls tool's notice: entry cap, byte cap."""
    return _cap_notice(entry_limit_reached, "entries", "", bytes_truncated, max_bytes)


# --------------------------------------------------------------------------
# Streaming bash output
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StreamSnapshot:
    """What a live update shows: tail truncation of the recent output."""

    truncation: TruncationResult
    total_bytes: int
    total_lines: int
    full_output_path: str | None

    @property
    def content(self) -> str:
        return self.truncation.content


@dataclass(frozen=True, slots=True)
class StreamingResult:
    """Final state of a :class:`StreamingTail`."""

    truncation: TruncationResult
    full_output_path: str | None
    last_line_bytes: int
    notice: str | None
    text: str  # pi's successful bash result text: output (or "(no output)") + notice
    # When the full-output file passed its cap: what it dropped (None: it holds everything).
    file_note: str | None = None
    dropped_bytes: int = 0

    def tool_text(
        self,
        *,
        exit_code: int | None = 0,
        aborted: bool = False,
        timeout_seconds: float | None = None,
    ) -> BashToolText:
        """Model text for the way the command ended (see :func:`bash_tool_text`)."""
        return bash_tool_text(
            self.truncation,
            self.full_output_path,
            last_line_bytes=self.last_line_bytes,
            exit_code=exit_code,
            aborted=aborted,
            timeout_seconds=timeout_seconds,
            file_note=self.file_note,
        )


OutputPath = str | os.PathLike[str] | Callable[[], str | os.PathLike[str]]


def _incomplete_utf8_suffix(buf: bytearray | bytes) -> int:
    """Bytes at the end of ``buf`` that start a UTF-8 sequence not yet complete."""
    size = len(buf)
    for back in range(1, min(3, size) + 1):
        byte = buf[size - back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII)
            if byte >= 0xF0:
                need = 4
            elif byte >= 0xE0:
                need = 3
            elif byte >= 0xC0:
                need = 2
            else:
                need = 1
            return back if need > back else 0
    return 0


class StreamingTail:
    """Bounded-memory accumulator for streamed bash output (raw bytes).

    * keeps a rolling buffer of the most recent output (about twice
      ``max_bytes``; never more than four times, plus one chunk);
    * once the output is truncated (over ``max_bytes`` bytes or ``max_lines``
      lines) opens the full-output file and writes everything from the start
      (still all in memory at that point), then appends every later chunk;
    * :meth:`snapshot` gives the tail truncation of the recent output with
      whole-stream totals, :meth:`finish` the final result, notice and text.

    ``output_path`` is where the full output goes: a file path, a callable
    returning one (called once, when the file is first needed), or a
    directory (a ``pi-bash-<random>.log`` file is created in it).  Default:
    the system temp directory.  The file is created with mode 0600.

    Totals count raw bytes; invalid UTF-8 is decoded with U+FFFD only for
    display and never raises.

    ``max_file_bytes`` caps the full-output file (piweb's, not pi's): once the
    output in it passes the cap, the file is rewritten in place to keep only
    its last half-cap (from a line start when one is near), behind a
    fixed-size header line that says how much was dropped; so the file never
    holds more than the cap plus that header, and the copy goes through a
    1 MB buffer (memory stays bounded).  The result's ``file_note`` then says
    so in the notice.
    """

    def __init__(
        self,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        *,
        output_path: OutputPath | None = None,
        file_prefix: str = "pi-bash",
        max_file_bytes: int | None = None,
    ) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        # Bytes kept after a trim: pi keeps twice the limit; the small margin
        # guarantees the kept tail never depends on the dropped first line.
        self._keep = 2 * max(max_bytes, 0) + 8
        self._trim_at = 2 * self._keep  # trim when the buffer grows past this
        self._output_path = output_path
        self._file_prefix = file_prefix
        self._buf = bytearray()
        self._buf_at_line_start = True  # does _buf begin at the start of a line?
        self._total_bytes = 0
        self._newlines = 0
        self._last_line_bytes = 0
        self._file: Any = None
        self._path: str | None = None
        self._finished = False
        # (at least 4 headers' worth: the in-place copy must never overlap backwards)
        self._max_file = max(max_file_bytes, 4 * CAPPED_HEADER_BYTES) if max_file_bytes else None
        self._file_data = 0  # output bytes in the file (after the header, if any)
        self._file_newlines = 0
        self._dropped_bytes = 0
        self._dropped_lines = 0

    # -- counters -----------------------------------------------------------

    @property
    def total_bytes(self) -> int:
        return self._total_bytes

    @property
    def total_lines(self) -> int:
        """Lines as pi 0.80.2 counts them: finished lines plus an unfinished last one."""
        return self._newlines + (1 if self._last_line_bytes else 0)

    @property
    def last_line_bytes(self) -> int:
        """Size of the last (possibly unfinished) line over the whole stream."""
        return self._last_line_bytes

    @property
    def full_output_path(self) -> str | None:
        return self._path

    @property
    def over_limit(self) -> bool:
        return self._total_bytes > self.max_bytes or self.total_lines > self.max_lines

    # -- feeding ------------------------------------------------------------

    def feed(self, chunk: bytes | bytearray | memoryview) -> None:
        """Add raw output bytes (any chunking, any bytes)."""
        if self._finished:
            raise RuntimeError("StreamingTail is finished")
        size = len(chunk)
        if not size:
            return
        self._total_bytes += size
        if isinstance(chunk, memoryview):
            chunk = chunk.tobytes()
        newlines = chunk.count(b"\n")
        if newlines:
            self._newlines += newlines
            self._last_line_bytes = size - 1 - chunk.rfind(b"\n")
        else:
            self._last_line_bytes += size

        if self._file is not None:
            self._write_file(chunk, newlines)
        elif self.over_limit:
            # Never trimmed so far (trimming needs > 4 * max_bytes in the
            # buffer, and we are only now past max_bytes): _buf is the start.
            self._open_file()
            self._write_file(chunk, newlines)

        buf = self._buf
        if size >= self._keep:
            cut = size - self._keep
            self._set_buffer(chunk, cut)
        else:
            buf += chunk
            if len(buf) > self._trim_at:
                self._trim(len(buf) - self._keep)

    def _set_buffer(self, data: Any, cut: int) -> None:
        while cut < len(data) and (data[cut] & 0xC0) == 0x80:
            cut += 1
        if cut > 0:
            self._buf_at_line_start = data[cut - 1] == 0x0A
        self._buf = bytearray(data[cut:])

    def _trim(self, cut: int) -> None:
        buf = self._buf
        while cut < len(buf) and (buf[cut] & 0xC0) == 0x80:
            cut += 1
        if cut > 0:
            self._buf_at_line_start = buf[cut - 1] == 0x0A
            del buf[:cut]

    def _open_file(self) -> None:
        if self._path is not None:  # opened once; never reopened (and truncated)
            return
        path = self._resolve_path()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o600)
        self._file = os.fdopen(fd, "wb")
        self._path = path
        if self._buf:
            self._write_file(self._buf, self._buf.count(b"\n"))

    # -- the capped full-output file ------------------------------------------

    def _write_file(self, data: Any, newlines: int) -> None:
        self._file.write(data)
        self._file_data += len(data)
        self._file_newlines += newlines
        if self._max_file is not None and self._file_data > self._max_file:
            self._keep_file_tail()

    def _header(self) -> bytes:
        cap = format_size(self._max_file or 0)
        text = (
            f"[piweb: this file keeps only the end of the output: the first "
            f"{self._dropped_bytes} bytes ({self._dropped_lines} lines) were dropped to "
            f"keep it under its {cap} cap]"
        )
        return text.encode().ljust(CAPPED_HEADER_BYTES - 1)[: CAPPED_HEADER_BYTES - 1] + b"\n"

    def _keep_file_tail(self) -> None:
        """Rewrite the file in place as header + the last half-cap of the output."""
        fh = self._file
        fh.flush()
        fd = fh.fileno()
        start = CAPPED_HEADER_BYTES if self._dropped_bytes else 0
        keep = max(1, (self._max_file or 0) // 2)
        src = start + self._file_data - keep
        # Start the kept part on a line when a newline is near.
        probe = os.pread(fd, min(64 * 1024, keep), src)
        newline = probe.find(b"\n")
        if 0 <= newline < len(probe) - 1:
            src += newline + 1
        kept = start + self._file_data - src
        dst = CAPPED_HEADER_BYTES
        kept_newlines = 0
        done = 0
        while done < kept:
            block = os.pread(fd, min(1 << 20, kept - done), src + done)
            if not block:
                break
            os.pwrite(fd, block, dst + done)
            kept_newlines += block.count(b"\n")
            done += len(block)
        self._dropped_bytes += self._file_data - done
        self._dropped_lines += self._file_newlines - kept_newlines
        self._file_data, self._file_newlines = done, kept_newlines
        os.pwrite(fd, self._header(), 0)
        os.ftruncate(fd, dst + done)
        fh.seek(dst + done)

    @property
    def file_note(self) -> str | None:
        """What the notice adds when the full-output file dropped the start."""
        if not self._dropped_bytes:
            return None
        return (
            f"that file keeps only the last {format_size(self._file_data)} (the full-output "
            f"cap is {format_size(self._max_file or 0)}; the first {self._dropped_lines} "
            "lines were dropped)"
        )

    def _resolve_path(self) -> str:
        target = self._output_path
        if callable(target):
            target = target()
        if target is None:
            target = tempfile.gettempdir()
        path = Path(target)
        if path.is_dir():
            path = path / f"{self._file_prefix}-{secrets.token_hex(8)}.log"
        return os.fspath(path)

    # -- reading ------------------------------------------------------------

    def _recent_text(self, final: bool) -> str:
        buf = self._buf
        end = len(buf) if final else len(buf) - _incomplete_utf8_suffix(buf)
        # Only the last ``_keep`` bytes can matter (see __init__); decoding
        # just those keeps snapshots cheap whatever the buffer holds.
        start = max(0, end - self._keep)
        if start > 0:
            while start < end and (buf[start] & 0xC0) == 0x80:
                start += 1
            at_line_start = buf[start - 1] == 0x0A
        else:
            at_line_start = self._buf_at_line_start
        if not at_line_start:
            # Drop the partial first line, unless it is the last line itself
            # (the only newline ahead being the one that ends the output).
            body_end = end - 1 if end > start and buf[end - 1] == 0x0A else end
            first = buf.find(b"\n", start, body_end)
            if first >= 0:
                start = first + 1
        if start >= end:
            return ""
        with memoryview(buf) as view:
            return str(view[start:end], "utf-8", "replace")

    def _truncation(self, final: bool) -> TruncationResult:
        tail = truncate_tail(self._recent_text(final), self.max_lines, self.max_bytes)
        total_bytes = self._total_bytes
        total_lines = self.total_lines
        truncated = tail.truncated or total_bytes > self.max_bytes or total_lines > self.max_lines
        truncated_by = tail.truncated_by
        content = tail.content
        output_bytes = tail.output_bytes
        if truncated and truncated_by is None:
            # The recent text fits, but older output exists.  Walking further
            # back, truncate_tail would stop on the line limit if it was
            # reached, else on the older line that cannot fit in the byte
            # limit; either way the trailing newline is not part of the result.
            truncated_by = "lines" if tail.output_lines >= self.max_lines else "bytes"
            if content.endswith("\n"):
                content = content[:-1]
                output_bytes -= 1
        return TruncationResult(
            content=content,
            truncated=truncated,
            truncated_by=truncated_by if truncated else None,
            total_lines=total_lines,
            total_bytes=total_bytes,
            output_lines=tail.output_lines,
            output_bytes=output_bytes,
            last_line_partial=tail.last_line_partial,
            first_line_exceeds_limit=False,
            max_lines=self.max_lines,
            max_bytes=self.max_bytes,
        )

    def snapshot(self) -> StreamSnapshot:
        """Tail truncation of the recent output (for live updates)."""
        truncation = self._truncation(final=self._finished)
        if truncation.truncated and not self._finished:
            # pi persists as soon as a snapshot is truncated (e.g. decoded
            # text over the limit although the raw bytes were not).
            self._open_file()
        return StreamSnapshot(truncation, self._total_bytes, self.total_lines, self._path)

    def finish(self) -> StreamingResult:
        """Close the full-output file and return the final result."""
        truncation = self._truncation(final=True)
        if truncation.truncated:
            self._open_file()
        self._finished = True
        self.close()
        note = self.file_note
        notice = bash_truncation_notice(truncation, self._path, self._last_line_bytes, note)
        text = append_notice(truncation.content or "(no output)", notice)
        return StreamingResult(
            truncation, self._path, self._last_line_bytes, notice, text, note, self._dropped_bytes
        )

    def close(self) -> None:
        """Close the full-output file (kept on disk)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._finished = True

    def __enter__(self) -> StreamingTail:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
