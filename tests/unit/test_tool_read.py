"""agent/tools/read.py: lines paged with offset and limit, pi's notices, images."""

import base64

import pytest

from tests.support.tool_runs import run, tool_context, tool_workspace

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture
def ws(tmp_path):
    return tool_workspace(tmp_path)


@pytest.fixture
def ctx(ws, tmp_path):
    return tool_context(ws, tmp_path)


def test_read_offset_limit_and_continuation(ctx, ws):
    (ws / "f.txt").write_text("\n".join(f"line {i}" for i in range(1, 11)))
    assert run(ctx, "read", {"path": "f.txt", "offset": 3, "limit": 2}).text == (
        "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"
    )
    result = run(ctx, "read", {"path": "f.txt", "offset": 50})
    assert result.is_error and result.text == "Offset 50 is beyond end of file (10 lines total)"


def test_read_head_truncation_notice(ctx, ws):
    (ws / "big.txt").write_text("\n".join(f"row {i}" for i in range(1, 3001)))
    result = run(ctx, "read", {"path": "big.txt"})
    assert result.text.endswith("\n\n[Showing lines 1-2000 of 3000. Use offset=2001 to continue.]")
    assert result.details["truncation"]["truncatedBy"] == "lines"
    (ws / "wide.txt").write_text(("x" * 100 + "\n") * 1000)
    result = run(ctx, "read", {"path": "wide.txt"})
    assert result.text.endswith(
        "[Showing lines 1-506 of 1001 (50.0KB limit). Use offset=507 to continue.]"
    )


def test_read_first_line_too_long(ctx, ws):
    (ws / "one.txt").write_text("y" * 60_000 + "\nshort\n")
    result = run(ctx, "read", {"path": "one.txt"})
    assert result.text == (
        "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' one.txt | head -c 51200]"
    )
    assert result.details["truncation"]["firstLineExceedsLimit"] is True


def test_read_image_returns_an_image_block(ctx, ws):
    (ws / "dot.png").write_bytes(PNG)
    result = run(ctx, "read", {"path": "dot.png"})
    assert result.content[0] == {"type": "text", "text": "Read image file [image/png]"}
    assert result.content[1]["type"] == "image" and result.content[1]["mimeType"] == "image/png"
    assert base64.b64decode(result.content[1]["data"]) == PNG


def test_read_invalid_utf8_and_missing(ctx, ws):
    (ws / "bad.txt").write_bytes(b"ok \xff\xfe end")
    assert run(ctx, "read", {"path": "bad.txt"}).text == "ok \ufffd\ufffd end"
    result = run(ctx, "read", {"path": "nope.txt"})
    assert result.is_error and result.text == "File not found: nope.txt"
