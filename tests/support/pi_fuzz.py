"""Hypothesis strategies for pi session files: valid trees plus hostile mutations.

`session_files()` draws a `FuzzFile`: the bytes of a JSONL session file whose header and
entries follow pi's format (v3; every entry type pi writes, and unknown ones), with odd
values mixed in: unicode of every category including lone surrogates, NUL, long strings,
numbers JSON.parse turns into Infinity or rounds (`1e999`, 400-digit integers), values
nested past the import's depth limit, unknown types and roles, invalid ids, and line
mutations (garbage lines, blank lines, CRLF, padding, invalid UTF-8).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import strategies as st

SESSION_ID = "f0220000-0000-4000-8000-000000000001"


class RawJSON(str):
    """JSON text written as is: a number token (so `1e999` reaches the file unrounded),
    or a value nested deeper than is worth building in Python."""


RAW_NUMBERS = [
    "1e999",
    "-1e999",
    "1" + "0" * 400,
    "1e-400",
    "-0",
    "9007199254740993",
    "1E+2",
    "0.30000000000000004",
    "123456789012345678901234567890",
]

HOSTILE_SNIPPETS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "```\n<b>code</b>\n```",
    "    <indented>",
    "[link](javascript:alert(1))",
    "<meta http-equiv=refresh content='0;url=//evil'>",
    "\x00",
    "\u202e",
    "a\r\nb",
    "\ud800",
    "\udfff",
    "\ud83d\ude00",
    "\ufeff",
    "`",
    "\x1b[31mred\x1b[0m",
    "../../../etc/passwd",
    "{{ 7*7 }}",
    "%(x)s",
]

odd_text = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=24),
    st.sampled_from(HOSTILE_SNIPPETS),
    st.builds(
        lambda piece, count: piece * count,
        st.sampled_from(["x", "é", "\ud83d\ude00", "<", "\n", "\ud800", "ab "]),
        st.sampled_from([1, 300, 5000, 70_000]),
    ),
)
plain_text = st.text(st.characters(codec="ascii", exclude_categories=("Cc",)), max_size=20)
text = st.one_of(plain_text, odd_text)

numbers = st.one_of(
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(RAW_NUMBERS).map(RawJSON),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, text)


def _nest(value, depth: int):
    if depth > 200:
        return RawJSON("[" * depth + "0" + "]" * depth)
    for index in range(depth):
        value = [value] if index % 2 else {"k": value}
    return value


_shallow_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)),
    max_leaves=8,
)
# Mostly shallow values; now and then one nested around the import's limit or far past it.
json_values = st.integers(0, 11).flatmap(
    lambda pick: (
        st.builds(_nest, scalars, st.sampled_from([20, 97, 98, 99, 150, 1200]))
        if pick == 0
        else _shallow_values
    )
)

ids = st.text("0123456789abcdef", min_size=8, max_size=8)
odd_ids = st.one_of(
    st.sampled_from(["a/b", "..", "", "x" * 65, "c\ud800", "space id"]), numbers, st.none()
)
roles = st.one_of(
    st.sampled_from(["user", "assistant", "toolResult", "bashExecution", "custom", "system"]),
    text,
)
STOP_REASONS = ["stop", "length", "toolUse", "error", "aborted"]


@st.composite
def usage(draw):
    keys = ["input", "output", "cacheRead", "cacheWrite", "totalTokens"]
    out = {key: draw(numbers) for key in keys if draw(st.booleans())}
    if draw(st.booleans()):
        out["cost"] = {"total": draw(numbers)}
    return out if draw(st.integers(0, 9)) else draw(json_values)


@st.composite
def content_blocks(draw, kinds=("text", "thinking", "toolCall", "image")):
    blocks = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.one_of(st.sampled_from(kinds), text))
        if kind == "text":
            blocks.append({"type": "text", "text": draw(text)})
        elif kind == "thinking":
            blocks.append({"type": "thinking", "thinking": draw(text)})
        elif kind == "toolCall":
            name = draw(st.one_of(st.sampled_from(["read", "bash", "edit", "write"]), text))
            arguments = draw(st.one_of(st.dictionaries(text, json_values, max_size=3), json_values))
            blocks.append(
                {"type": "toolCall", "id": draw(text), "name": name, "arguments": arguments}
            )
        elif kind == "image":
            data = draw(st.sampled_from(["iVBORw0KGgo=", "not base64 <script>", ""]))
            blocks.append({"type": "image", "mimeType": draw(text), "data": data})
        else:
            blocks.append({"type": kind, kind or "x": draw(json_values)})
    return blocks


@st.composite
def messages(draw):
    role = draw(roles)
    body: dict = {"role": role, "timestamp": draw(numbers)}
    if role == "assistant":
        body.update(
            content=draw(content_blocks()),
            provider=draw(text),
            model=draw(text),
            usage=draw(usage()),
            stopReason=draw(st.one_of(st.sampled_from(STOP_REASONS), text)),
        )
        if draw(st.booleans()):
            body["errorMessage"] = draw(text)
    elif role == "toolResult":
        body.update(
            toolCallId=draw(text),
            toolName=draw(text),
            content=draw(content_blocks(("text", "image"))),
            isError=draw(st.booleans()),
            details=draw(st.one_of(json_values, st.just({"truncation": {"truncated": True}}))),
        )
    elif role == "bashExecution":
        body.update(
            command=draw(text),
            output=draw(text),
            exitCode=draw(st.one_of(numbers, st.none())),
            cancelled=draw(st.booleans()),
            truncated=draw(st.booleans()),
            fullOutputPath=draw(text),
        )
    else:
        body["content"] = draw(st.one_of(text, content_blocks(), json_values))
    return body if draw(st.integers(0, 19)) else draw(json_values)


@st.composite
def entry_fields(draw, kind: str, earlier: list[str]) -> dict:
    some_id = st.sampled_from(earlier) if earlier else ids
    if kind == "message":
        return {"message": draw(messages())}
    if kind in ("compaction", "branch_summary"):
        out = {"summary": draw(text), "details": draw(json_values), "fromHook": draw(st.booleans())}
        if kind == "compaction":
            out.update(firstKeptEntryId=draw(st.one_of(some_id, text)), tokensBefore=draw(numbers))
            out["details"] = {"readFiles": draw(st.lists(text, max_size=3)), "modifiedFiles": []}
        else:
            out["fromId"] = draw(st.one_of(some_id, text))
        return out
    if kind == "custom_message":
        return {
            "customType": draw(text),
            "content": draw(st.one_of(text, content_blocks())),
            "display": draw(st.booleans()),
            "details": draw(json_values),
        }
    if kind == "custom":
        return {"customType": draw(text), "data": draw(json_values)}
    if kind == "label":
        return {
            "targetId": draw(st.one_of(some_id, text)),
            "label": draw(st.one_of(text, st.none())),
        }
    if kind == "session_info":
        return {"name": draw(text)}
    if kind == "model_change":
        return {"provider": draw(text), "modelId": draw(text)}
    if kind == "thinking_level_change":
        return {"thinkingLevel": draw(text)}
    if kind == "context_edit":
        replacement = draw(st.one_of(st.none(), st.builds(lambda c: {"content": c}, text)))
        return {"targetId": draw(st.one_of(some_id, text)), "replacement": replacement}
    if kind == "usage":
        return {
            "kind": draw(text),
            "provider": draw(text),
            "model": draw(text),
            "usage": draw(usage()),
        }
    return {draw(text): draw(json_values)}


ENTRY_TYPES = [
    "message",
    "message",
    "message",
    "compaction",
    "branch_summary",
    "custom_message",
    "custom",
    "label",
    "session_info",
    "model_change",
    "thinking_level_change",
    "context_edit",
    "usage",
]


@st.composite
def entries(draw) -> list[dict]:
    out: list[dict] = []
    taken: list[str] = []
    for _ in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(ENTRY_TYPES)) if draw(st.integers(0, 9)) else draw(text)
        eid = draw(ids.filter(lambda value: value not in taken))
        if not draw(st.integers(0, 14)):
            eid = draw(odd_ids)
        parent = draw(st.sampled_from([None, *taken])) if taken else None
        if not draw(st.integers(0, 14)):
            parent = draw(st.one_of(ids, odd_ids))
        entry = {"type": kind, "id": eid, "parentId": parent, "timestamp": draw(text)}
        entry.update(draw(entry_fields(kind, taken)))
        out.append(entry)
        if isinstance(eid, str):
            taken.append(eid)
    return out


def to_json(value, ascii_only: bool) -> str:
    """JSON text the way a (careless) writer might produce it; RawJSON tokens verbatim."""
    if isinstance(value, RawJSON):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=ascii_only)
    if isinstance(value, float | int | bool) or value is None:
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ",".join(to_json(item, ascii_only) for item in value) + "]"
    parts = (
        json.dumps(str(key), ensure_ascii=ascii_only) + ":" + to_json(item, ascii_only)
        for key, item in value.items()
    )
    return "{" + ",".join(parts) + "}"


LINE_MUTATIONS = ["none"] * 12 + ["garbage", "blank", "crlf", "padding", "duplicate", "not utf-8"]
GARBAGE = ["{", "[]", "null", '"text"', "{}", "nonsense", '{"type":"session","id":"x"}', "\x00"]


@dataclass
class FuzzFile:
    data: bytes
    header_is_current: bool


@st.composite
def session_files(draw) -> FuzzFile:
    header = {"type": "session", "version": 3, "id": SESSION_ID, "timestamp": draw(text)}
    header["cwd"] = draw(text)
    if draw(st.integers(0, 5)) == 0:
        header[draw(text)] = draw(json_values)
    current = True
    if draw(st.integers(0, 9)) == 0:
        header["version"] = draw(st.one_of(st.sampled_from([1, 2]), numbers))
        current = isinstance(header["version"], int | float) and header["version"] >= 3
    ascii_only = draw(st.booleans())
    lines: list[bytes] = [to_json(header, ascii_only).encode("utf-8", "surrogatepass")]
    for entry in draw(entries()):
        line = to_json(entry, draw(st.booleans()) and ascii_only).encode("utf-8", "surrogatepass")
        mutation = draw(st.sampled_from(LINE_MUTATIONS))
        if mutation == "garbage":
            line = draw(st.sampled_from(GARBAGE)).encode()
        elif mutation == "blank":
            lines.append(b"   ")
        elif mutation == "crlf":
            line += b"\r"
        elif mutation == "padding":
            line = b"  " + line + b" "
        elif mutation == "duplicate":
            lines.append(line)
        elif mutation == "not utf-8":
            stamp = b'"timestamp":"'
            line = line.replace(stamp, stamp + b"\xff\xfe", 1) if stamp in line else line + b"\xc3"
        lines.append(line)
    ending = draw(st.sampled_from([b"\n", b""]))
    return FuzzFile(b"\n".join(lines) + ending, current)
